"""The soak's timeline PNG: per phase, records written per second over time with every fault as a vertical
mark labelled by kind. Drawn with :mod:`bench.png` (matplotlib is not a dependency of the project)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.png import BLACK, GREY, RED, Canvas
from soak.output import rate_series
from soak.schedule import KINDS

#: Two-letter marks of the fault kinds (the chart's font is a 3x5 bitmap: labels must be short).
CODES = {"kill_driver": "KD", "kill_python_worker": "PW", "kill_executor": "EX",
         "kill_transaction_coordinator": "TC", "kill_group_coordinator": "GC", "kill_output_leader": "OL",
         "restart_broker": "RB", "pause_broker": "PB", "slow_transaction": "ST"}
BAR = (66, 133, 244)
MISSED = (240, 160, 40)  # a fault that found no open transaction
WIDTH, PANEL_H, TOP = 1400, 300, 64


def chart(results: dict[str, Any], path: Path) -> None:
    phases = results.get("phases") or []
    canvas = Canvas(WIDTH, TOP + max(1, len(phases)) * (PANEL_H + 12) + 40)
    canvas.text(12, 8, f"EOS SOAK SEED {results['seed']}  {results.get('verdict', '')}  "
                       f"WALL {results.get('wall_s', 0) / 60:.0f} MIN", scale=2)
    legend = "  ".join(f"{CODES[k]}={k.replace('_', ' ')}" for k in KINDS)
    canvas.text(12, 30, legend, scale=1)
    canvas.text(12, 44, "RED MARK: FAULT HIT AN OPEN TRANSACTION. ORANGE: NO OPEN TRANSACTION SEEN. "
                        "GREY: NOT APPLICABLE", scale=1)
    for i, phase in enumerate(phases):
        panel(canvas, 10, TOP + i * (PANEL_H + 12), WIDTH - 20, PANEL_H, phase)
    canvas.save(path)


def panel(canvas: Canvas, x: int, y: int, width: int, height: int, phase: dict[str, Any]) -> None:
    canvas.rect(x, y, x + width, y + height, (248, 248, 248))
    checks = phase.get("checks") or {}
    out = checks.get("output") or {}
    canvas.text(x + 8, y + 6, f"{phase['label']} ({phase['mode']}): RECORDS/S WRITTEN, "
                              f"DUPLICATES {out.get('duplicates', '?')}, LOST {out.get('lost', '?')}", scale=2)
    left, right, top, bottom = x + 60, x + width - 12, y + 40, y + height - 40
    span = max(1.0, float(phase.get("wall_s") or 1))
    bucket = max(2.0, span / 300)
    points = [(float(t), int(rows)) for t, rows in phase.get("progress") or []]
    rates = rate_series(points, 0.0, span, bucket)
    peak = max([*rates, 1.0]) * 1.1
    canvas.rect(left, bottom, right, bottom + 2, BLACK)
    canvas.rect(left - 2, top, left, bottom, BLACK)
    canvas.text(x + 4, top - 2, _short(peak), scale=1)
    canvas.text(x + 4, bottom - 6, "0", scale=1)
    slot = (right - left) / len(rates)
    for n, rate in enumerate(rates):
        h = (bottom - top) * rate / peak
        canvas.rect(left + n * slot, bottom - h, left + (n + 1) * slot + 1, bottom, BAR)
    for tick in _ticks(span):
        tx = left + (right - left) * tick / span
        canvas.rect(tx, bottom, tx + 1, bottom + 6, BLACK)
        canvas.text(tx - 8, bottom + 10, f"{tick:.0f}S", scale=1)
    for n, fault in enumerate(phase.get("faults") or []):
        at = fault.get("fault_s", fault.get("at_s"))
        if at is None:
            continue
        fx = left + (right - left) * min(float(at), span) / span
        color = GREY if not fault.get("applied", True) else RED if fault.get("open_transaction") else MISSED
        for dash in range(int(top), int(bottom), 6):
            canvas.rect(fx, dash, fx + 2, dash + 4, color)
        canvas.text(fx + 3, top + (n % 4) * 12, CODES.get(fault["kind"], "?"), color, scale=2)
    canvas.text(right - 200, bottom + 22, "SECONDS SINCE PHASE START", scale=1)


def _ticks(span: float) -> list[float]:
    for step in (10, 30, 60, 120, 300, 600, 900, 1800, 3600):
        if span / step <= 12:
            return [float(t) for t in range(0, int(span) + 1, step)]
    return [float(t) for t in range(0, int(span) + 1, 7200)]


def _short(value: float) -> str:
    return f"{value / 1000:.1f}K" if value >= 1000 else f"{value:.0f}"
