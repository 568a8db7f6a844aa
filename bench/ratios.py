"""The throughput table's modes, masters and ratios (pure: no Kafka, no Spark).

A mode key is a letter, and for the Spark jobs the number of local cores: ``a`` (raw
transactional producer), ``b@2`` (at-least-once on ``local[2]``), ``n@1`` (Spark's noop sink on
``local[1]``), ``c_d@2`` (exactly-once, driver writer), ``c_e@1`` (exactly-once, executor writers),
``c_p@2`` (exactly-once, executor writers with ``executor_writer: python``), ``c_dp@2`` (the
driver writer with ``executor_writer: python``: its spill in Python workers; only with ``--letters``).
Each repetition runs every mode once, back to back, so the runs of one repetition pair up: a
ratio per repetition cancels most of the load the shared machine put on that repetition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.measure import summarize

#: What each letter measures (the throughput table's first column).
LETTERS = {
    "a": "raw transactional producer",
    "b": "at-least-once (Spark's Kafka writer)",
    "n": "noop sink (Spark alone, writes nothing)",
    "c_d": "exactly-once, driver writer",
    "c_e": "exactly-once, executor writers (in the executor JVM, the default)",
    "c_p": "exactly-once, executor writers in Python workers (executor_writer: python)",
    "c_dp": "exactly-once, driver writer spilling from Python workers (executor_writer: python)",
}
#: The Spark jobs among the letters: they run once per master.
SPARK_LETTERS = ("b", "n", "c_d", "c_e", "c_p")
#: Spark jobs run only when ``--letters`` names them (a comparison, not a target).
OPTIONAL_LETTERS = ("c_dp",)
#: The executor writers' letters: the default (JVM) one and the Python one.
EXECUTOR_LETTERS = ("c_e", "c_p")
#: Ratios of the medians (and per repetition) reported for every master: (numerator, denominator).
RATIO_PAIRS = (("c_e", "b"), ("c_e", "n"), ("c_d", "b"), ("c_d", "n"), ("b", "n"), ("c_e", "c_d"), ("c_e", "a"),
               ("b", "a"), ("c_p", "b"), ("c_p", "c_e"), ("c_p", "n"), ("c_dp", "b"), ("c_d", "c_dp"))
#: The issue's targets on those ratios (at every master).
RATIO_TARGETS = {"c_e/b": 1.0, "c_e/n": 0.85, "c_d/b": 0.8}
#: CPU µs per record of all the job's processes: the executor writers' over Spark's Kafka writer's, at most.
CPU_TARGET = ("c_e", "b", 1.1)


def mode_key(letter: str, cores: int | None = None) -> str:
    """``a`` for the raw producer, ``<letter>@<cores>`` for a Spark job on ``local[<cores>]``."""
    return letter if cores is None else f"{letter}@{cores}"


def split_key(key: str) -> tuple[str, int | None]:
    """The inverse of :func:`mode_key`."""
    letter, _, cores = key.partition("@")
    return letter, int(cores) if cores else None


def master(cores: int) -> str:
    return f"local[{cores}]"


def label(key: str) -> str:
    """``(c_e) exactly-once, executor writers, local[2]``."""
    letter, cores = split_key(key)
    text = f"({letter}) {LETTERS.get(letter, letter)}"
    return text if cores is None else f"{text}, {master(cores)}"


def ordered_keys(cores: Sequence[int], letters: Sequence[str] | None = None) -> list[str]:
    """Run order within one repetition: the raw producer, then per master b, n, c_d, c_e, c_p back to back.

    :param letters: only these modes (``a`` among them for the raw producer); ``None``: all.
    """
    if letters is None:
        return ["a"] + [mode_key(letter, c) for c in cores for letter in SPARK_LETTERS]
    keys = ["a"] + [mode_key(letter, c) for c in cores for letter in (*SPARK_LETTERS, *OPTIONAL_LETTERS)]
    return [k for k in keys if split_key(k)[0] in letters]


#: The field of a run that ratios compare: records/s over all batches, or without batch 0 (its warm-up).
RATE = "records_per_s"
STEADY_RATE = "after_first_batch_records_per_s"


def _rate(run: dict[str, Any] | None, field: str = RATE) -> float | None:
    if not run or run.get("error") or not run.get(field):
        return None
    return float(run[field])


def median_ratio(summary: dict[str, dict[str, Any]], numerator: str, denominator: str,
                 field: str = RATE) -> float | None:
    """Ratio of two modes' median ``field`` (records/s); None when either is missing."""
    try:
        x = summary[numerator][field]["median"]
        y = summary[denominator][field]["median"]
    except (KeyError, TypeError):
        return None
    if x is None or not y:
        return None
    return round(x / y, 3)


def paired_ratio(runs_x: Sequence[dict[str, Any] | None], runs_y: Sequence[dict[str, Any] | None],
                 field: str = RATE) -> dict[str, Any]:
    """min / median / max of ``x / y`` over the repetitions where both ran (runs are in repetition order)."""
    values = [x / y for x, y in ((_rate(a, field), _rate(b, field)) for a, b in zip(runs_x, runs_y, strict=False))
              if x is not None and y]
    return summarize(values, 3)


def ratios(summary: dict[str, dict[str, Any]], runs: dict[str, list[dict[str, Any] | None]],
           cores: Sequence[int], field: str = RATE) -> dict[str, Any]:
    """Every ratio of :data:`RATIO_PAIRS` at every master, as the median ratio and per repetition.

    Keys are ``"c_e/b@2"``; a ratio against ``a`` (no master) pairs ``a`` with the job on that master.
    """
    of_medians: dict[str, float | None] = {}
    paired: dict[str, dict[str, Any]] = {}
    for c in cores:
        for x, y in RATIO_PAIRS:
            kx, ky = mode_key(x, None if x == "a" else c), mode_key(y, None if y == "a" else c)
            if kx not in summary or ky not in summary:
                continue
            key = f"{x}/{y}@{c}"
            of_medians[key] = median_ratio(summary, kx, ky, field)
            paired[key] = paired_ratio(runs.get(kx, []), runs.get(ky, []), field)
    return {"of_medians": of_medians, "paired": paired}


def scaling(summary: dict[str, dict[str, Any]], runs: dict[str, list[dict[str, Any] | None]],
            low: int, high: int) -> dict[str, dict[str, Any]]:
    """Per Spark letter: records/s on ``local[high]`` over ``local[low]``, of the medians and per repetition."""
    found: dict[str, dict[str, Any]] = {}
    for letter in SPARK_LETTERS:
        kl, kh = mode_key(letter, low), mode_key(letter, high)
        if kl in summary and kh in summary:
            found[letter] = {"of_medians": median_ratio(summary, kh, kl),
                             "paired": paired_ratio(runs.get(kh, []), runs.get(kl, []))}
    return found


def target_verdict(value: float | None, paired: dict[str, Any] | None, target: float) -> tuple[bool | None, str]:
    """Pass/miss of a ratio against its target, and a note when the repetitions disagree with the medians."""
    if value is None:
        return None, "not measured"
    passed = value >= target
    note = "ratio of the medians"
    if paired and paired.get("n", 0) > 1 and paired.get("median") is not None:
        note += (f"; per repetition (paired runs) {paired['min']:.2f} / {paired['median']:.2f} / "
                 f"{paired['max']:.2f} min / median / max")
        if (paired["median"] >= target) != passed:
            note += ": the paired median disagrees, the result is within the noise of this machine"
    return passed, note
