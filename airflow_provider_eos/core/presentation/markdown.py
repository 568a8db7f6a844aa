"""Compact Markdown for a person: a headline, a few facts, and small tables that fit a page.

The cards of :mod:`.cards` are read in Airflow's "Rendered Templates" tab, a monospace block, and
may be pasted into tickets and chats that render Markdown, so they are written to read well both
ways: padded pipe tables, one fact per bullet. A card is bounded: its tables keep the worst rows
and count the rest, and :func:`fit` keeps the whole card under a character budget (Airflow
truncates a rendered field above ``[core] max_templated_field_length``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from airflow_provider_eos.core.presentation.table import format_cell

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_ROWS",
    "Card",
    "ResultHeading",
    "clip",
    "fit",
    "md_table",
    "more_rows",
]

#: Characters a card may take: below Airflow's default ``max_templated_field_length`` (4096).
DEFAULT_MAX_CHARS = 3900
#: Rows a card's main table shows before it counts the rest.
DEFAULT_MAX_ROWS = 20
#: Widest a cell gets before it is clipped with an ellipsis, so a table stays readable.
MAX_CELL = 60

_TRUNCATED = "\n... (cut to fit; the task's XCom return_value holds the full report)"


def clip(text: str, width: int = MAX_CELL) -> str:
    """``text`` on one line, at most ``width`` characters (an ellipsis marks a cut)."""
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: max(width - 1, 0)] + "…"


def _cell(value: object, width: int) -> str:
    # '|' would end the cell in Markdown; escaped, it reads as itself in both forms.
    return clip(format_cell(value), width).replace("|", "\\|")


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool | enum.Enum)


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, max_cell: int = MAX_CELL) -> str:
    """A GitHub-flavoured Markdown table whose columns are padded, so it also reads as plain text.

    Numbers are right-aligned (``--:``), everything else left; ``None`` shows ``-``.

    :raises ValueError: if a row's length differs from the number of headers.
    """
    width = len(headers)
    cells: list[list[str]] = []
    numeric = [bool(rows)] * width
    for index, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"row {index} has {len(row)} cells but the table has {width} columns: {list(row)!r}")
        cells.append([_cell(value, max_cell) for value in row])
        for column, value in enumerate(row):
            numeric[column] = numeric[column] and (value is None or _numeric(value))
    head = [_cell(h, max_cell) for h in headers]
    widths = [max(3, len(h), *(len(r[c]) for r in cells)) for c, h in enumerate(head)]

    def line(texts: Sequence[str]) -> str:
        padded = [t.rjust(widths[c]) if numeric[c] else t.ljust(widths[c]) for c, t in enumerate(texts)]
        return "| " + " | ".join(padded) + " |"

    rule = "| " + " | ".join(("-" * (w - 1) + ":") if numeric[c] else ("-" * w) for c, w in enumerate(widths)) + " |"
    return "\n".join([line(head), rule, *(line(r) for r in cells), *([] if cells else ["(no rows)"])])


@dataclass(frozen=True)
class ResultHeading:
    """What every card starts with: which use case ran on which pipeline, and how it ended.

    :param use_case: ``verify``, ``abort``, ``rewind``, ``align``, ``health`` ...
    :param pipeline: the pipeline's name (or the spec file when the name is unknown).
    :param outcome: ``ok``, ``finding``, ``error`` or ``refused``.
    :param summary: one line naming the values.
    :param next_step: what a person should do now; empty when there is nothing to say.
    :param notes: remarks shown under the summary.
    :param dry_run: ``True`` adds "dry run: nothing changed" to the title.
    """

    use_case: str
    pipeline: str
    outcome: str
    summary: str
    next_step: str = ""
    notes: tuple[str, ...] = ()
    dry_run: bool = False

    def lines(self) -> list[str]:
        """The title and the bullets."""
        mode = " (dry run: nothing changed)" if self.dry_run else ""
        lines = [f"## {self.use_case} {self.pipeline}: {self.outcome.upper()}{mode}", ""]
        lines.append(f"- Outcome: {self.summary}")
        # A next step is a sentence; never print a placeholder such as "None".
        if self.next_step and self.next_step.strip() not in ("None", "-"):
            lines.append(f"- Next step: {self.next_step}")
        lines.extend(f"- Note: {note}" for note in self.notes)
        return lines


@dataclass
class Card:
    """A card under construction: the heading's lines, then sections separated by blank lines."""

    heading: ResultHeading
    sections: list[str] = field(default_factory=list)

    def add(self, *lines: str) -> Card:
        """Add a section (its lines joined); empty sections are skipped."""
        text = "\n".join(line for line in lines if line is not None).strip("\n")
        if text:
            self.sections.append(text)
        return self

    def text(self) -> str:
        """The card as Markdown."""
        return "\n\n".join(["\n".join(self.heading.lines()), *self.sections]) + "\n"


def more_rows(shown: int, total: int, what: str = "partition(s)") -> str:
    """The line under a cut table, or ``""`` when every row is shown."""
    return f"_{total - shown} more {what} not shown; the XCom return_value holds all {total}._" if shown < total else ""


def fit(render: Callable[[int], str], max_rows: int, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Render with at most ``max_rows`` rows, fewer while the text exceeds ``max_chars``; cut as a last resort.

    :param render: makes the card showing at most the given number of rows per table.
    """
    rows = max(max_rows, 0)
    text = render(rows)
    while len(text) > max_chars and rows > 0:
        rows //= 2
        text = render(rows)
    if len(text) <= max_chars:
        return text
    return text[: max(max_chars - len(_TRUNCATED), 0)].rstrip() + _TRUNCATED
