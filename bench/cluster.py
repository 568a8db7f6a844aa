"""Executor writers on a Spark standalone cluster: one worker against two (``python -m bench --only cluster``).

Issue 11 asks for the throughput of the executor writers on 1 vs 2 workers. The bench starts a
standalone cluster of two one-core workers (the devstack's own, :mod:`airflow_provider_eos.devstack.spark_cluster`)
and runs the throughput input through (c_e) the executor writers and, as the reference, (b)
Spark's at-least-once writer, each with ``spark.cores.max`` 1 (one executor: one worker) and 2
(one executor on each worker), and on two workers also (n) Spark alone and (c_d) the driver
writer, so the ratio targets hold on the cluster too; client deploy mode, interleaved per
repetition like the throughput table. Timing and checks are those of :func:`bench.throughput.job_run`.
The ratios are reported in total and in steady state (without batch 0), as the throughput
table's; an input where some records carry headers runs the two-worker letters again
(:data:`LETTERS_WITH_HEADERS`), since the targets hold with and without headers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.measure import log, summarize
from bench.ratios import LETTERS, STEADY_RATE, mode_key, ratios, scaling
from bench.throughput import ThroughputInput, job_run

#: The Spark letters measured on the cluster per number of workers: the scaling pair on both, every
#: letter of a ratio target on two.
LETTERS_ON_CLUSTER = {1: ("b", "c_e"), 2: ("b", "n", "c_d", "c_e")}
#: On the input with headers only the ratio targets' letters run (the scaling is the plain input's).
LETTERS_WITH_HEADERS = {2: LETTERS_ON_CLUSTER[2]}


def run(bootstrap: str, work_dir: Path, *, data: ThroughputInput, batch: int, repetitions: int,
        letters_on_cluster: dict[int, tuple[str, ...]] = LETTERS_ON_CLUSTER) -> dict[str, Any]:
    """Run the cluster's table; ``letters_on_cluster``: the letters per number of workers."""
    from airflow_provider_eos.devstack.spark_cluster import SparkCluster

    workers_measured = tuple(letters_on_cluster)
    keys = [mode_key(letter, n) for n, letters in letters_on_cluster.items() for letter in letters]
    runs: dict[str, list[dict[str, Any] | None]] = {key: [] for key in keys}
    failures: list[dict[str, Any]] = []
    cluster = SparkCluster(work_dir / "bench-spark-cluster")
    try:
        master = cluster.up(workers=max(workers_measured)).master_url
        for rep in range(repetitions):
            for key in keys:
                workers = int(key.rpartition("@")[2])
                log(f"cluster rep {rep + 1}/{repetitions}: {key} on {master}, {workers} worker(s)")
                try:
                    outcome = job_run(bootstrap, work_dir, data, key, batch, rep, 600 + len(data.records) / 500,
                                      master=master, spark_conf={"spark.cores.max": str(workers),
                                                                 "spark.executor.cores": "1"})
                except Exception as exc:  # one failed run must not lose the others
                    log(f"  {key} FAILED: {exc}")
                    failures.append({"mode": key, "repetition": rep + 1, "error": str(exc)[:4000]})
                    runs[key].append(None)
                    continue
                outcome["records_per_s"] = round(outcome["records"] / outcome["seconds"], 1)
                runs[key].append(outcome)
                log(f"  ({key}) {outcome['records_per_s']:,.0f} rec/s over {outcome['seconds']:.1f}s")
    finally:
        cluster.down()
    summary = {key: {"letter": key.partition("@")[0], "workers": int(key.rpartition("@")[2]),
                     "description": LETTERS[key.partition("@")[0]],
                     "records_per_s": summarize([r["records_per_s"] for r in items if r], 1),
                     STEADY_RATE: summarize([r[STEADY_RATE] for r in items if r and r.get(STEADY_RATE)], 1),
                     "runs": items}
               for key, items in runs.items()}
    return {"master": "spark standalone, client deploy mode, one-core workers", "workers": list(workers_measured),
            "repetitions": repetitions, "records": len(data.records), "max_offsets_per_trigger": batch,
            "headers_every": data.headers_every, "modes": summary, **_ratio_fields(summary, runs, workers_measured),
            "scaling": scaling(summary, runs, min(workers_measured), max(workers_measured))
            if len(workers_measured) > 1 else {}, "failures": failures}


def markdown(result: dict[str, Any]) -> list[str]:
    """The cluster table: records/s per writer and worker count, c_e/b and the 1 -> 2 worker scaling."""
    out = [f"{result['records']:,} records, batches of {result['max_offsets_per_trigger']:,}, "
           f"{result['repetitions']} repetition(s), {result['master']}.", "",
           "| mode | workers | records/s (min / median / max) | records/s without batch 0 (median) |",
           "|---|---|---|---|"]
    for mode in result["modes"].values():
        # From the runs: results written before the summary kept it have them too.
        r = mode["records_per_s"]
        steady = summarize([run[STEADY_RATE] for run in mode.get("runs") or [] if run and run.get(STEADY_RATE)],
                           1)["median"]
        shown = f"{r['min']:,.0f} / {r['median']:,.0f} / {r['max']:,.0f}" if r.get("median") else "-"
        out.append(f"| ({mode['letter']}) {mode['description']} | {mode['workers']} | {shown} | "
                   f"{'-' if steady is None else f'{steady:,.0f}'} |")
    for title, field in (("c_e/b", "ratios"), ("c_e/b without batch 0", "steady_ratios")):
        ratio = {k: v for k, v in (result.get(field) or {}).items() if k.startswith("c_e/b@") and v is not None}
        if ratio:
            out += ["", f"{title}: " + ", ".join(f"{v} at {k.rpartition('@')[2]} worker(s)"
                                                 for k, v in ratio.items()) + "."]
    if result.get("scaling"):
        out += ["", "Scaling from 1 to 2 workers (median records/s): " + ", ".join(
            f"{letter} {s['of_medians']}x" for letter, s in result["scaling"].items()) + "."]
    return out


def _ratio_fields(summary: dict[str, Any], runs: dict[str, list[dict[str, Any] | None]],
                  workers: tuple[int, ...]) -> dict[str, Any]:
    """The ratios of the medians and per repetition, in total and without batch 0, in the throughput
    table's shape (its targets read them)."""
    found, steady = ratios(summary, runs, workers), ratios(summary, runs, workers, STEADY_RATE)
    return {"ratios": found["of_medians"], "paired_ratios": found["paired"],
            "steady_ratios": steady["of_medians"], "steady_paired_ratios": steady["paired"]}
