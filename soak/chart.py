"""The soak's timeline PNG: per phase, records written per second over time with every fault as a vertical
mark labelled by kind. Drawn with matplotlib (the ``bench`` extra, as the bench's charts: :mod:`bench.plot`).

:func:`phase_series` and :func:`fault_marks` are the data each panel is drawn from (pure); :func:`chart`
draws them. An exactly-once phase that duplicated or lost records has its title in red: that is the
soak's failure; the at-least-once control is expected to duplicate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from bench.plot import figure_class
from soak.output import rate_series
from soak.schedule import KINDS

#: Two-letter marks of the fault kinds (short, so that marks close together stay readable).
CODES = {"kill_driver": "KD", "kill_python_worker": "PW", "kill_executor": "EX",
         "kill_transaction_coordinator": "TC", "kill_group_coordinator": "GC", "kill_output_leader": "OL",
         "restart_broker": "RB", "pause_broker": "PB", "slow_transaction": "ST"}
#: What a fault met: an open transaction (what the soak is after), none seen, or it could not be applied.
Hit = Literal["open", "none", "skipped"]
HIT_COLORS: dict[Hit, str] = {"open": "#d62728", "none": "#ff7f0e", "skipped": "#9e9e9e"}
HIT_LABELS: dict[Hit, str] = {"open": "fault hit an open transaction", "none": "no open transaction seen",
                              "skipped": "not applicable (not applied)"}
BAR = "#4c72b0"


def phase_series(phase: dict[str, Any]) -> tuple[list[float], list[float], float]:
    """``(bucket starts in s, records/s per bucket, bucket width in s)`` of one phase's progress."""
    span = max(1.0, float(phase.get("wall_s") or 1))
    bucket = max(2.0, span / 300)  # at most ~300 bars, whatever the phase's length
    points = [(float(t), int(rows)) for t, rows in phase.get("progress") or []]
    rates = rate_series(points, 0.0, span, bucket)
    return [n * bucket for n in range(len(rates))], rates, bucket


def fault_marks(phase: dict[str, Any]) -> list[tuple[float, str, Hit]]:
    """``(seconds since the phase started, kind's code, what it hit)`` of each fault with a time."""
    span = max(1.0, float(phase.get("wall_s") or 1))
    marks: list[tuple[float, str, Hit]] = []
    for fault in phase.get("faults") or []:
        at = fault.get("fault_s", fault.get("at_s"))
        if at is None:
            continue
        hit: Hit = "skipped" if not fault.get("applied", True) else "open" if fault.get("open_transaction") else "none"
        marks.append((min(float(at), span), CODES.get(fault["kind"], "?"), hit))
    return marks


def failed(phase: dict[str, Any]) -> bool:
    """An exactly-once phase whose output has duplicates or losses (the control's duplicates are expected)."""
    out = (phase.get("checks") or {}).get("output") or {}
    return phase.get("mode") == "exactly-once" and bool(out.get("duplicates") or out.get("lost"))


def chart(results: dict[str, Any], path: Path) -> None:
    phases = results.get("phases") or []
    fig = figure_class()(figsize=(16, 2.2 + 3.2 * max(1, len(phases))), dpi=100, layout="constrained")
    axes = fig.subplots(max(1, len(phases)), 1, squeeze=False)[:, 0]
    for ax, phase in zip(axes, phases, strict=False):
        _panel(ax, phase)
    fig.suptitle(f"eos soak, seed {results['seed']}: {results.get('verdict', '')}, "
                 f"wall {results.get('wall_s', 0) / 60:.0f} min", fontsize=14, fontweight="bold")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=HIT_COLORS[h], linestyle="--", label=HIT_LABELS[h]) for h in HIT_COLORS]
    codes = ",  ".join(f"{CODES[k]} {k.replace('_', ' ')}" for k in KINDS)
    fig.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False, fontsize=10,
               title=f"fault marks: {codes}", title_fontsize=9)
    fig.savefig(path, format="png")


def _panel(ax: Any, phase: dict[str, Any]) -> None:
    out = (phase.get("checks") or {}).get("output") or {}
    ax.set_title(f"{phase['label']} ({phase['mode']}): duplicates {out.get('duplicates', '?')}, "
                 f"lost {out.get('lost', '?')}", loc="left", fontsize=11, fontweight="bold",
                 color="#b00000" if failed(phase) else "#222222")
    starts, rates, bucket = phase_series(phase)
    ax.bar(starts, rates, width=bucket, align="edge", color=BAR, linewidth=0)
    top = max([*rates, 1.0]) * 1.25
    span = max(1.0, float(phase.get("wall_s") or 1))
    for n, (at, code, hit) in enumerate(fault_marks(phase)):
        ax.axvline(at, color=HIT_COLORS[hit], linestyle="--", linewidth=1)
        # Four label rows: marks a few seconds apart do not print over each other.
        ax.text(at, top * (0.97 - 0.06 * (n % 4)), code, color=HIT_COLORS[hit], fontsize=8, fontweight="bold",
                ha="left", va="top")
    ax.set_xlim(0, span)
    ax.set_ylim(0, top)
    ax.set_xlabel("seconds since the phase started", fontsize=9)
    ax.set_ylabel("records/s written", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
