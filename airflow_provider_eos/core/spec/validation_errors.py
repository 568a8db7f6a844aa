"""From pydantic's ``ValidationError`` to one :class:`SpecError` that names every bad field, where it is, and its fix.

The spec's own rules raise ``"<what is wrong>; <fix>"`` and are shown as written, with anything
secret-looking hidden (:func:`~airflow_provider_eos.core.secrets.redact_text`); pydantic's
messages (missing, unknown with a "did you mean", wrong type) get a fix of their own and name
the type found, never the value: the value may be a password, and the message reaches
Airflow's import errors. Paths use brackets after the field (``kafka['bootstrap.servers']``)
because Kafka keys contain dots; a file's line and column follow the path. The message is
bounded: a few lines per problem, a few dozen problems.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.secrets import redact_text
from airflow_provider_eos.core.spec.bounded_yaml import LocationMap, render_path

__all__ = ["KeyedValueError", "spec_error"]

#: Problems listed in one error; the rest are counted.
MAX_PROBLEMS = 20
#: Characters of one problem's message.
MAX_PROBLEM_CHARS = 300

_TYPE_NAMES = {
    dict: "a mapping", list: "a list", str: "a string", int: "an integer", float: "a number", bool: "a boolean",
    type(None): "null",
}


class KeyedValueError(ValueError):
    """A rule's ``ValueError`` about one key of a mapping field: the error's path ends with ``key``.

    :param message: ``"<what is wrong>; <fix>"``.
    :param key: the key of the mapping the problem is about.
    """

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


def type_name(value: Any) -> str:
    """What a value is (``a list``, ``a string``), to name instead of the value itself."""
    return _TYPE_NAMES.get(type(value), f"a {type(value).__name__}")


def _located(loc: tuple[str | int, ...], locations: LocationMap) -> str:
    """`` (line L, column C)`` of ``loc``, or of its nearest parent the file has (a missing key's mapping)."""
    for size in range(len(loc), 0, -1):
        if loc[:size] in locations:
            line, column = locations[loc[:size]]
            return f" (line {line}, column {column})"
    return ""


def _bounded(text: str) -> str:
    text = redact_text(text)
    return text if len(text) <= MAX_PROBLEM_CHARS else text[: MAX_PROBLEM_CHARS - 3] + "..."


def _problem(item: Mapping[str, Any], allowed: list[str]) -> tuple[tuple[str | int, ...], str, str | None]:
    """``(path, message, fix)`` of one pydantic error."""
    loc = tuple(item["loc"])
    kind = item["type"]
    if kind == "extra_forbidden":
        field = str(loc[0]) if loc else "?"
        close = difflib.get_close_matches(field, allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return loc, f"unknown field{hint}; allowed fields: {', '.join(allowed)}", f"remove or rename {field!r}"
    if kind == "missing":
        return loc, "required field is missing", f"add {render_path(loc)}"
    if kind == "value_error":
        error = (item.get("ctx") or {}).get("error")
        if isinstance(error, KeyedValueError):
            loc = (*loc, error.key)
        # Our rules write "<what is wrong>; <fix>".
        return loc, str(item["msg"]).removeprefix("Value error, "), None
    fix = f"give {render_path(loc)} a value of the expected type"
    return loc, f"{item['msg']}, got {type_name(item.get('input'))}", fix


def spec_error(
    err: ValidationError,
    data: Mapping[str, Any],
    source: str | None,
    allowed: Sequence[str],
    locations: LocationMap | None = None,
) -> SpecError:
    """The :class:`SpecError` for a spec that failed validation.

    :param err: pydantic's error.
    :param data: the spec's fields as given (its ``name``, if any, is named in the message).
    :param source: where ``data`` came from (a file name), or ``None``.
    :param allowed: the spec's field names, listed for an unknown field.
    :param locations: where each key is in the file (:class:`~.document.SpecDocument`), if known.
    """
    problems: list[str] = []
    fixes: list[str] = []
    items = err.errors(include_url=False)
    for item in items[:MAX_PROBLEMS]:
        loc, message, fix = _problem(item, list(allowed))
        problems.append(f"{render_path(loc)}{_located(loc, locations or {})}: {_bounded(message)}")
        if fix:
            fixes.append(fix)
    if len(items) > MAX_PROBLEMS:
        problems.append(f"... and {len(items) - MAX_PROBLEMS} more problems")
    name = data.get("name") if isinstance(data.get("name"), str) else None
    what = f"pipeline spec {_bounded(repr(name))}" if name else "pipeline spec"
    where = f" ({source})" if source else ""
    message = f"{what}{where} is invalid:\n" + "\n".join(f"  - {p}" for p in problems)
    fix = "; ".join(["correct each field as its line above says", *dict.fromkeys(fixes)])
    return SpecError(message, fix=fix)
