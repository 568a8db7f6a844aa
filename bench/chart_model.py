"""What a bench chart shows, as data (pure: no matplotlib): panels of bars, each bar with its target.

:mod:`bench.report_chart` builds the panels from a run's results and :mod:`bench.plot` draws them,
so the tests check what is plotted (values, targets, verdicts) without reading pixels. A bar held
to a target carries the bound, its direction and the verdict of :func:`bench.report_targets.evaluate_targets`
(the markdown table's PASS / MISS), so the chart and the table can never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

#: How a bar is drawn: ``miss`` (a target missed), ``pass`` (met), ``target`` (a bound without a verdict),
#: ``plain`` (no target), ``missing`` (not measured in this run).
Status = Literal["miss", "pass", "target", "plain", "missing"]


@dataclass(frozen=True)
class Bar:
    """One measured figure, its spread and the target it is held to (if any).

    :param label: the category axis' label (short: it sits under or beside the bar).
    :param value: the figure (a median), ``None`` when not measured.
    :param low: the whisker's low end (the minimum over repetitions), if any.
    :param high: the whisker's high end.
    :param target: the bound of the bar's target.
    :param at_most: ``True`` when the target is an upper bound (latency, seconds), else a lower bound.
    :param passed: the report's verdict on that target (``None``: not evaluated).
    """

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    target: float | None = None
    at_most: bool = False
    passed: bool | None = None

    @property
    def status(self) -> Status:
        if self.value is None:
            return "missing"
        if self.target is None:
            return "plain"
        if self.passed is None:
            return "target"
        return "pass" if self.passed else "miss"

    @property
    def bound(self) -> str:
        """``>= 0.85`` / ``<= 60``: the target as the markdown table writes it."""
        if self.target is None:
            return ""
        return f"{'<=' if self.at_most else '>='} {number(self.target)}"


@dataclass(frozen=True)
class Panel:
    """One plot of the chart's grid.

    :param title: what is measured.
    :param unit: the value axis' label (the unit, and what the whiskers are).
    :param category: the category axis' label.
    :param horizontal: bars left to right (long labels, e.g. the ratios), else bottom to top.
    :param log: a logarithmic value axis (a target far above the measured figures).
    :param reference: a line that is no target, e.g. linear scaling at 2x: ``(value, label)``.
    :param note: a line under the title (what the figure excludes, the raw producer's ceiling ...).
    """

    title: str
    unit: str
    bars: tuple[Bar, ...]
    category: str = ""
    horizontal: bool = False
    log: bool = False
    reference: tuple[float, str] | None = None
    note: str = ""

    @property
    def empty(self) -> bool:
        return all(bar.value is None for bar in self.bars)

    def by_label(self) -> dict[str, Bar]:
        return {bar.label: bar for bar in self.bars}


@dataclass(frozen=True)
class Chart:
    """A whole figure: a title, a subtitle (the run's load) and the panels in reading order."""

    title: str
    subtitle: str
    panels: tuple[Panel, ...] = field(default_factory=tuple)

    def panel(self, title_start: str) -> Panel:
        """The panel whose title starts with ``title_start`` (tests and callers name panels by title)."""
        for panel in self.panels:
            if panel.title.startswith(title_start):
                return panel
        raise KeyError(f"no panel titled {title_start!r}: {[p.title for p in self.panels]}")


def number(value: float) -> str:
    """A figure as the chart labels it: thousands separated, two significant decimals below 10."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def spread(summary: dict | None, scale: float = 1.0) -> tuple[float | None, float | None, float | None]:
    """``(median, min, max)`` of a :func:`bench.measure.summarize` summary, divided by ``scale``."""
    if not summary or summary.get("median") is None:
        return None, None, None
    return tuple(None if summary.get(k) is None else summary[k] / scale  # type: ignore[return-value]
                 for k in ("median", "min", "max"))


def verdicts(targets: Sequence[dict]) -> dict[str, bool | None]:
    """``{target key: pass}`` of the report's target rows."""
    return {row["key"]: row.get("pass") for row in targets}
