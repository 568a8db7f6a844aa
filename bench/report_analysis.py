"""The report's notes on where the time goes and what would close each missed target.

:func:`analyze` reads the measured figures and the verdicts of :func:`bench.report_targets.evaluate_targets`
(``results["targets"]``); the notes on the two exactly-once writers' targets come from
:func:`bench.report_writers.writers_notes`. :mod:`bench.__main__` stores the notes in the results, and
:func:`bench.report.markdown` prints them last.
"""

from __future__ import annotations

from typing import Any

from bench.report_targets import eos_latency
from bench.report_writers import control_note, writers_notes


def _spread(tp: dict[str, Any], key: str) -> str:
    """A sentence on the ratio's per-repetition range, where there was more than one repetition."""
    paired = (tp.get("paired_ratios") or {}).get(key)
    if not paired or paired["n"] < 2:
        return ""
    return (f" Within single repetitions {key} ranged from {paired['min']:.2f} to {paired['max']:.2f}: on this "
            "shared machine one run does not settle a ratio this close to its target.")


def analyze(results: dict[str, Any]) -> list[str]:
    """Notes from the measured figures: where the time goes and what would close each missed target."""
    notes: list[str] = []
    targets = {t["key"]: t for t in results.get("targets") or []}
    notes += writers_notes(results, targets)
    if (results.get("control") or {}).get("shapes") and (note := control_note(results["control"])):
        notes.append(note)
    tp = results.get("throughput") or {}
    modes = tp.get("modes") or {}
    prof = (results.get("profile") or {}).get("modes") or {}
    med = {k: (m.get("records_per_s") or {}).get("median") for k, m in modes.items()}
    if "c/b" in targets:
        t = targets["c/b"]
        eos = prof.get("exactly-once", {})
        sink = eos.get("key_functions") or {}
        collect = (sink.get("collect_output (Spark job -> Arrow)") or {}).get("cumulative_s")
        total = eos.get("sink_total_s")
        detail = ""
        if collect and total:
            detail += (f" In the cProfile run the exactly-once sink spends {collect / total:.0%} of its time in "
                       "`collect_output` (a Spark job: Kafka fetch, row decoding, Arrow conversion, streamed to the "
                       f"driver) and {1 - collect / total:.0%} producing and committing.")
        c_runs = (modes.get("c") or {}).get("runs") or []
        a_runs = (modes.get("a") or {}).get("runs") or []
        produce_share = None
        if c_runs and all(r.get("sink_ms_total") for r in c_runs):
            produce_ms = sum(r["sink_ms_total"]["produce_ms"] for r in c_runs)
            produce_share = produce_ms / 1000 / sum(r["seconds"] for r in c_runs)
            per_record = produce_ms * 1000 / sum(r["records"] for r in c_runs)
            raw = (sum(r["seconds"] for r in a_runs) * 1e6 / sum(r["records"] for r in a_runs)) if a_runs else None
            detail += (f" Unprofiled, the produce phase (`to_pydict`, the per-record loop, flush) is "
                       f"{produce_share:.0%} of the exactly-once batch time, {per_record:.1f} µs per record"
                       + (f", against {raw:.1f} µs per record for the raw producer (a) including its commits"
                          if raw else "") + ".")
        if t["pass"]:
            notes.append(f"- **c/b = {t['value']:.2f} (pass).** Exactly-once keeps up with Spark's own at-least-once "
                         "writer: both are bound by the same Spark read path, and the driver-side transactional "
                         f"producer costs no more than the JVM producer tasks.{detail}" + _spread(tp, "c/b"))
        else:
            overlap = (f" Overlapping the produce phase with the collect would bound c/b at about "
                       f"{t['value'] / (1 - produce_share):.2f}." if produce_share else "")
            notes.append(f"- **c/b = {t['value']:.2f} (miss).** The exactly-once batch first collects the whole batch "
                         "to the driver and then produces it serially in one Python thread, where the at-least-once "
                         f"writer produces inside the reading tasks.{detail}{overlap} Closing it: a fast path in "
                         "`_produce` for batches without headers and dead letters (no per-record header and DLQ "
                         "work), producing per Arrow record batch while the next one streams in instead of one "
                         "`toArrow()` + `to_pydict()`, and for scale the executor-mode sink (writers on executors, "
                         "docs/architecture.md)." + _spread(tp, "c/b"))
    if "c/a" in targets and not targets["c/a"]["pass"]:
        t = targets["c/a"]
        read_only = (prof.get("spark-read-only") or {}).get("records_per_s")
        parts = [f"- **c/a = {t['value']:.2f} (miss).** The raw producer (a) does no reading at all: "
                 f"{med.get('a') or 0:,.0f} rec/s is librdkafka's rate from Python lists."]
        if read_only and med.get("a"):
            ceiling = read_only / med["a"]
            verdict = ("so on this machine no sink behind Spark's Kafka source can reach c/a = 0.5"
                       if ceiling < 0.5 else "so the ceiling itself would allow c/a = 0.5")
            share = (med.get("c") or 0) / read_only
            where = (f"runs at about that Spark-only ceiling ({share:.0%} of it; single profiled runs, noisy)"
                     if share >= 0.85 else f"reaches {share:.0%} of that Spark-only ceiling")
            parts.append(f"Spark alone (the job's source with a `noop` sink, profile step) reaches {read_only:,.0f} "
                         f"rec/s, {ceiling:.2f} of (a), {verdict}; the exactly-once job {where}.")
        eos = prof.get("exactly-once") or {}
        if eos.get("phases"):
            share = eos["phases"]["share"]
            fixed = share["queryPlanning"] + share["walCommit"] + share["commitOffsets"] + share["latestOffset"]
            parts.append(f"Of each exactly-once batch, `addBatch` (the sink, including the Spark job it triggers) is "
                         f"{share['addBatch']:.0%} and Spark's per-batch fixed work (planning, WAL, commit log, "
                         f"offsets) {fixed:.0%}.")
        categories = (eos.get("jvm") or {}).get("executor_task_categories") or {}
        if categories:
            top = ", ".join(f"{k} {v:.0%}" for k, v in list(categories.items())[:3])
            parts.append(f"In the JVM's executor tasks the samples go to {top}.")
        cpu = (eos.get("jvm") or {}).get("cpu") or {}
        if cpu:
            parts.append(f"The machine was {cpu['machine_busy_percent']:.0f}% busy during the run (the JVM "
                         f"{cpu['jvm_percent_of_machine']:.0f}% of it): the pipeline is CPU-bound on 2 shared cores.")
        parts.append("What would close the gap: cores for Spark's tasks (its read scales with input partitions x "
                     "executor cores, the raw producer is one thread), larger batches to amortise the fixed "
                     "per-batch work, and for the sink itself the executor mode (produce where the data is read, "
                     "no Arrow collect to the driver).")
        notes.append(" ".join(parts))
    if "p99" in targets:
        t = targets["p99"]
        lat_all = results.get("latency") or {}
        lat_mode, lat = eos_latency(results)
        lat = lat or {}
        trigger = lat.get("trigger_ms", 1000)
        batch = lat.get("batch_ms") or {}
        sink = lat.get("sink_ms_median") or {}
        parts = [f"- **p99 = {t['value']:,.0f} ms, {lat_mode} ({'pass' if t['pass'] else 'miss'}).**"]
        if batch.get("median") is not None:
            parts.append(f"A record waits for the next trigger (0 to {trigger:,} ms), then for its whole batch: "
                         f"median {batch['median']:,.0f} ms, max {batch['max']:,.0f} ms"
                         + (f", {lat['batches_longer_than_trigger']:.0%} of the batches longer than the trigger "
                            "(the query then falls behind and the next batch is larger)"
                            if lat.get("batches_longer_than_trigger") is not None else "")
                         + ". Per exactly-once batch (median): "
                         + ", ".join(f"{k.removesuffix('_ms')} {sink[k]:,.0f} ms" for k in sink
                                     if sink[k] is not None and (sink[k] or k != "collect_ms"))
                         + (f" (the executor writers' write job: {lat['tasks_ms_median']:,.0f} ms)"
                            if lat.get("tasks_ms_median") is not None else "")
                         + "; the rest is Spark's own per-batch work and the sink's protocol reads.")
        eos_prof = (((results.get("profile") or {}).get("modes") or {}).get("exactly-once") or {})
        if eos_prof.get("phases") and eos_prof.get("batches"):
            seconds = eos_prof["phases"]["seconds"]
            fixed = sum(seconds[k] for k in ("queryPlanning", "walCommit", "commitOffsets", "latestOffset", "getBatch"))
            parts.append(f"Spark's fixed work per batch (planning, WAL, commit log, offsets) was "
                         f"{fixed * 1000 / eos_prof['batches']:,.0f} ms in the profile run.")
        alo = (lat_all.get("at-least-once") or {})
        if alo.get("latency_ms"):
            parts.append(f"Spark's at-least-once writer under the same trigger, rate and machine: p50 "
                         f"{alo['latency_ms']['p50']:,.0f} ms, p99 {alo['latency_ms']['p99']:,.0f} ms, batch median "
                         f"{alo['batch_ms']['median']:,.0f} ms: most of a record's wait is the trigger and Spark's "
                         "own per-batch work, alike with either sink; exactly-once's median batch is "
                         f"{batch.get('median', 0) - alo['batch_ms']['median']:+,.0f} ms against it ("
                         + ("the per-partition transactions' round trips and the plan read"
                            if lat.get("tasks_ms_median") is not None else
                            "the collect to the driver and the sink's protocol reads instead of Spark's write tasks")
                         + ").")
        if not t["pass"] and lat.get("tasks_ms_median") is not None:
            parts.append("Closing it: the batch must reliably finish inside the trigger, which on this shared "
                         "2-core machine (load above) it does not; an idle or larger machine was not measured. In "
                         "the executor writers a small batch still pays one task per input partition, each with a "
                         "group-offset read, `send_offsets` and a commit round trip (and a producer re-init where "
                         "the partition's task last ran in another Python worker); Spark's fixed per-batch work "
                         "stays.")
        elif not t["pass"]:
            parts.append("Closing it: the batch must reliably finish inside the trigger, which on this shared "
                         "2-core machine (load above) it does not; an idle or larger machine was not measured. In "
                         "the sink, the collect of a small batch is a Spark job with one task per input partition: "
                         "coalescing small batches to one partition before `toArrow()`, and the executor mode (no "
                         "collect to the driver), would cut the sink's share; Spark's fixed per-batch work stays.")
        notes.append(" ".join(parts))
    if "recovery" in targets:
        t = targets["recovery"]
        rec = results.get("recovery") or {}
        parts = f"abort {rec['abort_s']['median']:.1f} s, verify {rec['verify_s']['median']:.1f} s, " \
                f"eos run until the first new output {rec['restart_to_first_output_s']['median']:.1f} s " \
                "(JVM and SparkSession start, query start, the replayed batch)" if rec.get("abort_s") else ""
        notes.append(f"- **recovery {t['measured']} ({'pass' if t['pass'] else 'miss'}).** Median split: {parts}."
                     + ("" if t["pass"] else " Most of it is Spark's start; a warm standby driver or skipping the "
                        "separate CLI processes (one Python process for abort and verify) would shorten it."))
    mem = results.get("memory") or {}
    if "memory" in targets and mem.get("sizes"):
        t = targets["memory"]
        growth = {label: (by_size.get("growth") or {}).get("total") for label, by_size in mem["writers"].items()}
        notes.append(f"- **driver RSS {t['measured']} for the driver writer ({'pass' if t['pass'] else 'miss'}).** "
                     "Growth of the driver's RSS (Python + JVM"
                     + (", on a standalone cluster: the executors run in the workers" if mem.get("masters") else "")
                     + f") from one batch of {mem['sizes'][0]:,} records to one of {mem['sizes'][1]:,}: "
                     + ", ".join(f"{k} {v}x" for k, v in growth.items() if v is not None) + ".")
    elif (mem.get("exactly-once") or {}).get("peak_rss_mb") and (mem.get("at-least-once") or {}).get("peak_rss_mb"):
        e, b = mem["exactly-once"]["peak_rss_mb"], mem["at-least-once"]["peak_rss_mb"]
        if "driver_python" in e and "driver_python" in b:
            notes.append(f"- **memory (no target).** One batch of {mem['batch_records']:,} records "
                         f"({mem['batch_bytes'] / 1e6:.0f} MB of keys and values) raises the Python driver's peak "
                         f"to {e['driver_python']:.0f} MB, {e['driver_python'] - b['driver_python']:.0f} MB above the "
                         "at-least-once driver (which collects nothing): the Arrow table, its `to_pydict()` copy and "
                         "librdkafka's send queue hold the batch at the same time, so it grows with "
                         "max_offsets_per_trigger x record size; the JVM "
                         f"peaks at {e.get('jvm', 0):.0f} MB against {b.get('jvm', 0):.0f} MB.")
    if "verify" in targets:
        t = targets["verify"]
        ver = (results.get("scale") or {}).get("verification") or {}
        render = max((s["render_ms"]["median"] for s in (ver.get("scenarios") or {}).values()), default=None)
        notes.append(f"- **verification of {ver.get('partitions', 0):,} partitions {t['measured']} "
                     f"({'pass' if t['pass'] else 'miss'}).** Rendering the full text table of every partition "
                     f"takes {render or 0:,.0f} ms more; the operator's log and XCom would want the worst rows only "
                     "(`verification_text(report, max_rows=...)`).")
    return notes
