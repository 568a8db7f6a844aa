"""Draws a :class:`~bench.chart_model.Chart` with matplotlib (the ``bench`` extra) into a PNG.

Colours say the verdict, so a missed target shows at a glance: green met, red (hatched, labelled
MISS) missed, grey no target. The target itself is a black bar across the bar it applies to, with
its bound written beside it. Figures are built on :class:`matplotlib.figure.Figure` directly, not
through pyplot, so nothing global (an interactive backend, open figures) is touched.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.chart_model import Chart, Panel, Status, number

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: Fill and hatch per :data:`~bench.chart_model.Status` (the figure's legend shows the same).
COLORS: dict[Status, str] = {"pass": "#2ca02c", "miss": "#d62728", "target": "#ff7f0e", "plain": "#8c9fb5",
                             "missing": "#ffffff"}
HATCHES: dict[Status, str] = {"miss": "///"}
LEGEND: dict[Status, str] = {"pass": "target met", "miss": "target missed", "target": "target, no verdict",
                             "plain": "no target"}
TARGET_COLOR = "#111111"
INSTALL_HINT = "the bench charts need matplotlib: pip install -e '.[bench]' -c constraints-3.11.txt (make install does)"


def figure_class() -> Any:
    """matplotlib's :class:`~matplotlib.figure.Figure`, or an ImportError that says which extra brings it."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # the bench is optional: an Airflow worker's install has no matplotlib
        raise ImportError(INSTALL_HINT) from exc
    return Figure


def render(chart: Chart, path: Path, columns: int = 3) -> None:
    """Draw ``chart``'s panels in a grid of ``columns`` and write the PNG to ``path``."""
    rows = max(1, math.ceil(len(chart.panels) / columns))
    fig = figure_class()(figsize=(6.2 * columns, 4.4 * rows + 0.9), dpi=100, layout="constrained")
    axes = list(fig.subplots(rows, columns, squeeze=False).flat)
    for ax, panel in zip(axes, chart.panels, strict=False):
        draw_panel(ax, panel)
    for ax in axes[len(chart.panels):]:
        ax.set_axis_off()
    fig.suptitle(f"{chart.title}\n{chart.subtitle}", fontsize=14, fontweight="bold")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=COLORS[s], edgecolor="#333333", hatch=HATCHES.get(s, ""), label=label)
               for s, label in LEGEND.items()]
    handles.append(Line2D([], [], color=TARGET_COLOR, linewidth=3, label="target bound (<= / >=)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False, fontsize=10)
    fig.savefig(path, format="png")


def draw_panel(ax: Axes, panel: Panel) -> None:
    """One panel: bars coloured by verdict, whiskers, the target bounds and the value labels."""
    ax.set_title(panel.title, loc="left", fontsize=11, fontweight="bold", pad=16 if panel.note else 6)
    if panel.note:  # under the title, above the plot
        ax.annotate(panel.note, (0, 1), xycoords="axes fraction", xytext=(0, 4), textcoords="offset points",
                    fontsize=8.5, style="italic", color="#444444", va="bottom", ha="left")
    if panel.empty:
        ax.text(0.5, 0.5, "not measured in this run", ha="center", va="center", transform=ax.transAxes,
                color="#777777")
        ax.set_xticks([])
        ax.set_yticks([])
        return
    bars = panel.bars
    positions = list(range(len(bars)))
    floor = _floor(panel)
    values = [floor if bar.value is None else bar.value for bar in bars]
    statuses = [bar.status for bar in bars]
    drawn = (ax.barh if panel.horizontal else ax.bar)(positions, values, 0.7, color=[COLORS[s] for s in statuses],
                                                      edgecolor="#333333", linewidth=0.6)
    for patch, status in zip(drawn, statuses, strict=True):
        patch.set_hatch(HATCHES.get(status, ""))
    _whiskers(ax, panel, positions)
    _targets(ax, panel, positions)
    _labels(ax, panel, positions)
    value_axis, category_axis = (ax.xaxis, ax.yaxis) if panel.horizontal else (ax.yaxis, ax.xaxis)
    value_axis.set_label_text(panel.unit, fontsize=9)
    category_axis.set_label_text(panel.category, fontsize=9)
    long = max(len(bar.label) for bar in bars) > 8 and len(bars) > 6 and not panel.horizontal
    if panel.horizontal:
        ax.set_yticks(positions, [bar.label for bar in bars], fontsize=9)
        ax.invert_yaxis()  # reading order: the first bar on top
    else:
        ax.set_xticks(positions, [bar.label for bar in bars], fontsize=8 if long else 9)
    if panel.log:
        (ax.set_xscale if panel.horizontal else ax.set_yscale)("log")
    _limits(ax, panel)
    ax.grid(axis="x" if panel.horizontal else "y", alpha=0.3)
    ax.set_axisbelow(True)
    if panel.reference:
        value, label = panel.reference
        (ax.axvline if panel.horizontal else ax.axhline)(value, color="#777777", linestyle=":", linewidth=1.2)
        ax.annotate(f"{label} {number(value)}", (1, value) if not panel.horizontal else (value, 0),
                    xycoords=("axes fraction", "data") if not panel.horizontal else ("data", "axes fraction"),
                    ha="right", va="bottom", fontsize=8, color="#555555")


def _floor(panel: Panel) -> float:
    """Where a bar without a value is drawn (its label says n/a): 0, or a log axis' lowest figure."""
    if not panel.log:
        return 0.0
    return min((bar.value for bar in panel.bars if bar.value), default=1.0) / 2


def _whiskers(ax: Axes, panel: Panel, positions: list[int]) -> None:
    for pos, bar in zip(positions, panel.bars, strict=True):
        if bar.value is None or bar.low is None or bar.high is None:
            continue
        error = [[max(0.0, bar.value - bar.low)], [max(0.0, bar.high - bar.value)]]
        kwargs: dict[str, Any] = {"fmt": "none", "ecolor": "#333333", "elinewidth": 1, "capsize": 4}
        if panel.horizontal:
            ax.errorbar([bar.value], [pos], xerr=error, **kwargs)
        else:
            ax.errorbar([pos], [bar.value], yerr=error, **kwargs)


def _targets(ax: Axes, panel: Panel, positions: list[int]) -> None:
    """A thick black bound across each bar held to a target, its bound written at the end."""
    for pos, bar in zip(positions, panel.bars, strict=True):
        if bar.target is None:
            continue
        if panel.horizontal:
            ax.vlines(bar.target, pos - 0.45, pos + 0.45, colors=TARGET_COLOR, linewidth=3, zorder=4)
        else:
            ax.hlines(bar.target, pos - 0.45, pos + 0.45, colors=TARGET_COLOR, linewidth=3, zorder=4)
            ax.annotate(bar.bound, (pos + 0.45, bar.target), textcoords="offset points", xytext=(2, 2),
                        fontsize=8, color=TARGET_COLOR, ha="left", va="bottom", zorder=5)


def _labels(ax: Axes, panel: Panel, positions: list[int]) -> None:
    """The figure at each bar's end; a missed target says MISS and its bound, in red."""
    for pos, bar in zip(positions, panel.bars, strict=True):
        status = bar.status
        if status == "missing":
            text = "n/a"
        elif panel.horizontal and bar.target is not None:
            text = f"{number(bar.value)}  ({'MISS' if status == 'miss' else 'target'} {bar.bound})"
        else:
            text = number(bar.value) + ("\nMISS" if status == "miss" else "")
        # Past the whisker (and, across, past the target line) so that the label covers neither.
        ends = [v for v in (bar.value, bar.high, bar.target if panel.horizontal else None) if v is not None]
        tip = max(ends) if ends else _floor(panel)
        color, weight = ("#b00000", "bold") if status == "miss" else ("#222222", "normal")
        if panel.horizontal:
            ax.annotate(text, (tip, pos), textcoords="offset points", xytext=(4, 0), va="center", ha="left",
                        fontsize=8, color=color, fontweight=weight)
        else:
            ax.annotate(text, (pos, tip), textcoords="offset points", xytext=(0, 3), va="bottom", ha="center",
                        fontsize=8, color=color, fontweight=weight)


def _limits(ax: Axes, panel: Panel) -> None:
    """Room above the tallest bar, whisker or target for the labels (horizontal: room on the right)."""
    tops = [v for bar in panel.bars for v in (bar.value, bar.high, bar.target) if v is not None]
    if panel.reference:
        tops.append(panel.reference[0])
    top = max(tops, default=1.0)
    if panel.log:
        bottom = min(v for bar in panel.bars for v in (bar.value, bar.low) if v) / 2
        (ax.set_xlim if panel.horizontal else ax.set_ylim)(bottom, top * 4)
    else:
        (ax.set_xlim if panel.horizontal else ax.set_ylim)(0, top * (1.55 if panel.horizontal else 1.2))
