"""The README's command table against the ``eos`` parser: every command and option in one is in the other.

The table is written by hand (its second column explains); this test keeps its first column honest.
A row's first cell holds the command in backticks, ``eos devstack up [--state-dir D] ...``, and may
name sibling commands after it, ``/ `status [--state-dir D]``` (the same group, another last word),
each with its own options. Options hidden from ``--help`` (kept for old scripts) are not listed.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

from airflow_provider_eos.cli.main import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"
_OPTION = re.compile(r"--[a-z][a-z0-9-]*")
_CODE = re.compile(r"`([^`]+)`")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def parser_commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], set[str]]]:
    """Every leaf command of the parser with its long options (``--help`` and hidden ones left out)."""
    children = _subcommands(parser)
    if not children:
        yield path, {option for action in parser._actions if action.help != argparse.SUPPRESS
                     for option in action.option_strings if option.startswith("--") and option != "--help"}
        return
    for name, child in children.items():
        yield from parser_commands(child, (*path, name))


def _command_path(words: list[str], root: argparse.ArgumentParser) -> tuple[str, ...]:
    """The longest run of leading words that names nested subcommands."""
    path: list[str] = []
    parser = root
    for word in words:
        child = _subcommands(parser).get(word)
        if child is None:
            break
        path.append(word)
        parser = child
    return tuple(path)


def table_commands(text: str, root: argparse.ArgumentParser) -> dict[tuple[str, ...], set[str]]:
    """Each command the README's table names, with the options its cell lists."""
    found: dict[tuple[str, ...], set[str]] = {}
    for line in text.splitlines():
        if not line.startswith("| `eos "):
            continue
        # The first cell ends at the first "|" that is not escaped ("1\|3" is an alternative).
        cell = re.split(r"(?<!\\)\|", line)[1].replace("\\|", "|")
        segments = _CODE.findall(cell)
        first = _command_path(segments[0].split()[1:], root)
        assert first, f"no eos command in {segments[0]!r}"
        for index, segment in enumerate(segments):
            if index == 0:
                path = first
            else:  # a sibling: the same group, its own last word(s)
                group = first[:-1]
                parent = root
                for word in group:
                    parent = _subcommands(parent)[word]
                path = (*group, *_command_path(segment.split(), parent))
                assert len(path) > len(group), f"{segment!r} names no command beside {' '.join(first)!r}"
            assert path not in found, f"{' '.join(path)} has two rows"
            found[path] = set(_OPTION.findall(segment))
    return found


def test_every_command_and_option_of_the_parser_is_in_the_readme_table_and_nothing_else() -> None:
    root = build_parser()
    parsed = dict(parser_commands(root))
    documented = table_commands(README.read_text(encoding="utf-8"), root)

    assert sorted(parsed) == sorted(documented), (
        f"missing from the README's table: {sorted(set(parsed) - set(documented))}; "
        f"in the table, not in the parser: {sorted(set(documented) - set(parsed))}"
    )
    differences = {
        " ".join(path): {"missing": sorted(parsed[path] - documented[path]),
                         "not an option": sorted(documented[path] - parsed[path])}
        for path in parsed if parsed[path] != documented[path]
    }
    assert not differences, differences


def test_the_table_reader_sees_siblings_and_escaped_alternatives() -> None:
    root = build_parser()
    rows = ("| `eos devstack up [--brokers 1\\|3] [--yarn]` / `status [--state-dir D]` | text with `--other` |\n"
            "| `eos repair rewind --spec F [--execute]` | x |\n")
    assert table_commands(rows, root) == {
        ("devstack", "up"): {"--brokers", "--yarn"},
        ("devstack", "status"): {"--state-dir"},
        ("repair", "rewind"): {"--spec", "--execute"},
    }
