"""Measurement helpers: load averages, summaries of repetitions, percentiles, timing, the bench's log."""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any


def loadavg() -> dict[str, float]:
    """The 1/5/15-minute load averages, recorded before every measurement."""
    one, five, fifteen = os.getloadavg()
    return {"1m": round(one, 2), "5m": round(five, 2), "15m": round(fifteen, 2)}


def summarize(values: Sequence[float], digits: int = 3) -> dict[str, Any]:
    """min / median / max (and the values) of repeated measurements."""
    if not values:
        return {"n": 0, "min": None, "median": None, "max": None, "values": []}
    return {
        "n": len(values),
        "min": round(min(values), digits),
        "median": round(statistics.median(values), digits),
        "max": round(max(values), digits),
        "values": [round(v, digits) for v in values],
    }


def percentile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile ``q`` (0..100) of an ascending sequence."""
    if not ordered:
        raise ValueError("no values")
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
