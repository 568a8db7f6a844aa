"""Where a steady batch's time goes, by Spark's own phases (``durationMs`` in the job's ``EOS-PROGRESS`` lines).

Every Spark mode pays the same micro-batch chores (the end offsets, planning, the offsets WAL and the
commit log, both files written in the checkpoint); a writer shows only in ``addBatch``. The table
lets a reader see how much of a batch no writer can change.
"""

from __future__ import annotations

import statistics
from typing import Any

from airflow_provider_eos.spark.batch_progress import SPARK_PHASES as PHASES

__all__ = ["PHASES", "median_phase_ms", "phase_lines", "steady_phase_ms"]


def steady_phase_ms(progress: list[dict[str, Any]]) -> dict[str, float]:
    """Per phase, the mean milliseconds per batch over ``progress`` (batches after batch 0); empty without phases."""
    timed = [p["spark_ms"] for p in progress if p.get("spark_ms")]
    if not timed:
        return {}
    return {phase: round(sum(t.get(phase, 0) for t in timed) / len(timed), 1) for phase in PHASES}


def median_phase_ms(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Per phase, the median over ``runs`` of their ``spark_phase_ms``; empty when none has them."""
    found = [r["spark_phase_ms"] for r in runs if r.get("spark_phase_ms")]
    return {phase: round(statistics.median(f.get(phase, 0) for f in found), 1) for phase in PHASES} if found else {}


def phase_lines(tp: dict[str, Any]) -> list[str]:
    """A table of Spark's phases per steady batch, per mode (median over the runs), or nothing without them."""
    modes = [m for m in tp["modes"].values() if m.get("spark_phase_ms")]
    if not modes:
        return []
    out = ["", "Spark's phases of a batch in steady state (after batch 0), milliseconds per batch, median over the "
           "runs (`durationMs` of Spark's progress): every Spark mode pays the end-offset lookup, planning and the "
           "checkpoint's two files (`walCommit`: the offsets log, `commitOffsets`: the commit log); the writer is in "
           "`addBatch` (for the exactly-once sink, also its plan read and protocol reads on the driver).", "",
           "| mode | " + " | ".join(f"`{phase}`" for phase in PHASES) + " | outside `addBatch` |",
           "|---|" + "---|" * (len(PHASES) + 1)]
    for mode in modes:
        figures = mode["spark_phase_ms"]
        outside = sum(v for phase, v in figures.items() if phase != "addBatch")
        out.append(f"| {mode['label']} | " + " | ".join(f"{figures.get(phase, 0):,.0f}" for phase in PHASES)
                   + f" | {outside:,.0f} |")
    return out
