"""The report's lines on what each mode costs the machine, whose cores the broker shares with Spark.

Three figures: the CPU per record of the job's processes (and of the broker beside them), the requests the
broker served per batch (by type, from its own meters, :mod:`bench.broker_requests`), and whether the machine's
CPU is what bounds a ratio: when Spark and the broker together keep both cores busy,
records/s follow the inverse of the CPU spent per record by the job's processes plus the broker, so the ratio of
two modes' CPU per record predicts the ratio of their records/s. Shown per repetition beside the measured ratio.
"""

from __future__ import annotations

from typing import Any

from bench.broker_requests import SHOWN
from bench.ratios import STEADY_RATE, master

#: CPU µs per record of the job's processes: in all, and in steady state.
JOB_CPU = ("cpu_us_per_record", "cpu_steady_us_per_record")


def cpu_lines(tp: dict[str, Any]) -> list[str]:
    """CPU µs per record of all the job's processes (medians), and each exactly-once writer's over (b)'s."""
    modes = tp["modes"]
    if not any((m.get("cpu_us_per_record") or {}).get("median") for m in modes.values()):
        return []
    brokers = any((m.get("broker_cpu_us_per_record") or {}).get("median") for m in modes.values())
    jit = any((m.get("broker_jit_ms") or {}).get("n") for m in modes.values())
    out = ["", "CPU of all the job's processes (JVM, Python driver, Python workers) per input record, median µs: "
           "in all (start-up included) / in steady state (after batch 0); ratio over (b) on the same master."
           + (" The broker's CPU over the same runs beside it: it shares the cores with Spark." if brokers else "")
           + (" The broker's JIT: milliseconds its JVM spent compiling during a run (min / median / max)."
              if jit else ""),
           "", "| mode | CPU µs/record (all / steady) | over (b) (all / steady) |"
           + (" broker CPU µs/record (all / steady) |" if brokers else "")
           + (" broker JIT ms per run |" if jit else ""),
           "|---|---|---|" + ("---|" if brokers else "") + ("---|" if jit else "")]
    for key, mode in modes.items():
        cells = [_median_of(mode, f) for f in JOB_CPU]
        if cells[0] is None:
            continue
        baseline = modes.get("b@" + key.split("@")[1]) if "@" in key else None
        bases = [_median_of(baseline, f) if baseline else None for f in JOB_CPU]
        over = ["-" if c is None or not b else f"{c / b:.2f}" for c, b in zip(cells, bases, strict=True)]
        row = f"| {mode['label']} | {_pair(cells)} | {' / '.join(over)} |"
        if brokers:
            broker = [_median_of(mode, f) for f in ("broker_cpu_us_per_record", "broker_cpu_steady_us_per_record")]
            row += f" {_pair(broker)} |"
        if jit:
            row += f" {_spread(mode.get('broker_jit_ms'))} |"
        out.append(row)
    return out + warm_up_lines(tp)


def warm_up_lines(tp: dict[str, Any]) -> list[str]:
    """What the warm-up rounds (counted in no figure) cost the broker's JIT, per round and mode: it settles."""
    rounds: dict[int, list[str]] = {}
    for run in tp.get("warm_up") or []:
        figure = run.get("broker_jit_ms")
        rounds.setdefault(run["round"], []).append(
            f"{run['mode']} {'failed' if 'failed' in run else '-' if figure is None else f'{figure:,}'}")
    if not rounds:
        return []
    return ["", "Warm-up rounds (not counted), the broker's JIT milliseconds per run: "
            + "; ".join(f"round {n}: {', '.join(cells)}" for n, cells in sorted(rounds.items())) + "."]


def _spread(summary: dict[str, Any] | None) -> str:
    if not summary or not summary.get("n"):
        return "-"
    return " / ".join(f"{summary[k]:,.0f}" for k in ("min", "median", "max"))


def _median_of(mode: dict[str, Any], figure: str) -> float | None:
    return (mode.get(figure) or {}).get("median")


def _pair(cells: list[float | None]) -> str:
    return " / ".join("-" if c is None else f"{c:.1f}" for c in cells)


#: Per record in steady state: the job's processes and the broker (µs); the machine's CPU is their sum.
_STEADY_CPU = ("cpu_steady_us_per_record", "broker_cpu_steady_us_per_record")


def request_lines(tp: dict[str, Any]) -> list[str]:
    """A table of the broker's requests per batch, per mode (median over the runs), or nothing without them."""
    modes = [m for m in tp["modes"].values() if m.get("broker_requests_per_batch")]
    if not modes:
        return []
    columns = [kind for kind in (*SHOWN, "other") if any(m["broker_requests_per_batch"].get(kind) for m in modes)]
    out = ["", "Requests the broker served per batch, median over the runs (Kafka's own request meters, read over "
           "JMX before and after each job; `AddPartitionsToTxnVerification` is the partition leader asking the "
           "transaction coordinator whether a transactional produce belongs to an open transaction; "
           "`transactional` sums what only transactions send: coordinator lookups, offset reads, the "
           "transaction's requests and its markers).", "",
           "| mode | " + " | ".join(columns) + " | transactional | total |",
           "|---|" + "---|" * (len(columns) + 2)]
    for mode in modes:
        figures = mode["broker_requests_per_batch"]
        cells = [_count(figures.get(kind)) for kind in (*columns, "transactional", "total")]
        out.append(f"| {mode['label']} | " + " | ".join(cells) + " |")
    return out


def cpu_bound_lines(tp: dict[str, Any]) -> list[str]:
    """Per exactly-once letter against (b), per master: the ratio the machine's CPU predicts beside the measured one."""
    out = []
    for cores in tp["cores"]:
        base = tp["modes"].get(f"b@{cores}")
        for letter in ("c_e", "c_d"):
            mode = tp["modes"].get(f"{letter}@{cores}")
            pairs = _paired(base, mode) if base and mode else []
            if pairs:
                cells = ", ".join(f"{predicted:.2f} / {measured:.2f}" for predicted, measured in pairs)
                out.append(f"- {letter}/b on {master(cores)}, steady state, predicted / measured per repetition: "
                           f"{cells}.")
    if not out:
        return []
    return ["", "Is the machine's CPU the bound? The CPU per record of the job's processes plus the broker's, in "
            "steady state, of (b) over that of the mode predicts the mode's records/s over (b)'s when both cores "
            "are busy:", "", *out]


def _paired(base: dict[str, Any], mode: dict[str, Any]) -> list[tuple[float, float]]:
    """Per repetition where both runs have their rate and CPU figures: (predicted, measured) mode/b."""
    figures = (STEADY_RATE, *_STEADY_CPU)
    return [(sum(b[f] for f in _STEADY_CPU) / sum(m[f] for f in _STEADY_CPU), m[STEADY_RATE] / b[STEADY_RATE])
            for b, m in zip(base["runs"], mode["runs"], strict=False)
            if b and m and all(run.get(f) for run in (b, m) for f in figures)]


def _count(value: float | None) -> str:
    return "-" if not value else f"{value:,.1f}"
