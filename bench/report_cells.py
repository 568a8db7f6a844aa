"""Cells the report's tables share: a figure's spread over its repetitions and the machine's load.

Every section of :mod:`bench.report` (and of :mod:`bench.report_writers`) prints these the same way,
so a reader compares a cell in one table with a cell in another at a glance.
"""

from __future__ import annotations

from typing import Any


def mmm(s: dict[str, Any] | None, fmt: str = "{:,.0f}") -> str:
    """``min / median / max`` of a summary (:func:`bench.measure.summarize`), each in ``fmt``.

    :param s: the summary; ``None`` or one without a median (the figure was not measured) prints ``-``.
    :param fmt: the format of each of the three numbers.
    """
    if not s or s.get("median") is None:
        return "-"
    return " / ".join(fmt.format(s[k]) for k in ("min", "median", "max"))


def load(entry: dict[str, Any] | None) -> str:
    """The 1-minute load average recorded before one measurement (``-``: not recorded)."""
    return "-" if not entry else f"{entry['1m']:.2f}"


def loads(runs: list[dict[str, Any] | None]) -> str:
    """The range of the 1-minute load averages recorded before the given runs (``-``: none recorded).

    :param runs: the runs; ``None`` stands for a run that did not happen (a writer's cell left empty).
    """
    values = [r["loadavg_before"]["1m"] for r in runs if r and r.get("loadavg_before")]
    return "-" if not values else f"{min(values):.2f}-{max(values):.2f}"
