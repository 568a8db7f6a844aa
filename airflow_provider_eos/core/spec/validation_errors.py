"""From pydantic's ``ValidationError`` to one :class:`SpecError` that names every bad field and its fix.

The spec's own rules raise ``"<what is wrong>; <fix>"`` and are shown as written; pydantic's
messages (missing, unknown with a "did you mean", wrong type) get a fix of their own. Paths
use brackets after the field (``kafka['bootstrap.servers']``) because Kafka keys contain dots.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from airflow_provider_eos.core.errors import SpecError

__all__ = ["spec_error"]


def _render_loc(loc: tuple[int | str, ...]) -> str:
    if not loc:
        return "(spec)"
    head, *rest = loc
    path = str(head)
    for part in rest:
        # Keys like 'bootstrap.servers' contain dots, so brackets keep the path unambiguous.
        path += f"[{part}]" if isinstance(part, int) else f"[{part!r}]"
    return path


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def spec_error(
    err: ValidationError, data: Mapping[str, Any], source: str | None, allowed: Sequence[str]
) -> SpecError:
    """The :class:`SpecError` for a spec that failed validation.

    :param err: pydantic's error.
    :param data: the spec's fields as given (its ``name``, if any, is named in the message).
    :param source: where ``data`` came from (a file name), or ``None``.
    :param allowed: the spec's field names, listed for an unknown field.
    """
    allowed = list(allowed)
    problems: list[str] = []
    fixes: list[str] = []
    for item in err.errors(include_url=False):
        loc = tuple(item["loc"])
        path = _render_loc(loc)
        kind = item["type"]
        if kind == "extra_forbidden":
            field = str(loc[0]) if loc else "?"
            close = difflib.get_close_matches(field, allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"{path}: unknown field{hint}; allowed fields: {', '.join(allowed)}")
            fixes.append(f"remove or rename {field!r}")
        elif kind == "missing":
            problems.append(f"{path}: required field is missing")
            fixes.append(f"add {path}")
        elif kind == "value_error":
            # Our validators write "<what is wrong>; <fix>"; the value is named inside.
            message = str(item["msg"]).removeprefix("Value error, ")
            problems.append(f"{path}: {message}")
        else:
            expected = str(item["msg"])
            problems.append(f"{path}: {expected}, got {_short(item.get('input'))}")
            fixes.append(f"give {path} a value of the expected type")
    name = data.get("name") if isinstance(data.get("name"), str) else None
    what = f"pipeline spec {name!r}" if name else "pipeline spec"
    where = f" ({source})" if source else ""
    message = f"{what}{where} is invalid:\n" + "\n".join(f"  - {p}" for p in problems)
    fix = "; ".join(["correct each field as its line above says", *dict.fromkeys(fixes)])
    return SpecError(message, fix=fix)
