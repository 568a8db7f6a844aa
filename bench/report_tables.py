"""The report's tables of the benches other than the writers' throughput: latency, recovery, the Airflow-side
scale, the standalone cluster, memory and the profile, and the throughput table of the results from before the
two exactly-once writers (one ``c`` mode; :mod:`bench.report_writers` renders the writers' own).

Each function takes its bench's part of the results and returns the section's markdown lines;
:func:`bench.report.markdown` decides which sections a run's results have and in which order.
"""

from __future__ import annotations

from typing import Any

from bench.report_cells import load, loads, mmm


def throughput_before_writers(tp: dict[str, Any]) -> list[str]:
    """The throughput table of one ``c`` mode against ``a`` and ``b`` (results from before the writers)."""
    inp = tp["input"]
    out = ["## Throughput", "",
           f"Same input for all three: {inp['records']:,} records, {inp['avg_record_bytes']:.0f} bytes on "
           f"average (key + value, {inp['bytes'] / 1e6:.0f} MB), {inp['topic_partitions']} partitions; "
           f"batches / transactions of max_offsets_per_trigger = {inp['max_offsets_per_trigger']:,} records; "
           f"{tp['modes']['a']['records_per_s']['n']} repetition(s) each, interleaved a, b, c. "
           f"Timing: {tp['timing_basis']}.", "",
           "| mode | records/s (min / median / max) | MB/s (min / median / max) | processing s (median) "
           "| first-to-last batch s (median) | records/s without batch 0 (median) | load 1m |",
           "|---|---|---|---|---|---|---|"]
    for key, mode in tp["modes"].items():
        f2l = [r.get("first_to_last_s") for r in mode["runs"] if r.get("first_to_last_s")]
        later = sorted(r["after_first_batch_records_per_s"] for r in mode["runs"]
                       if r.get("after_first_batch_records_per_s"))
        out.append(f"| ({key}) {mode['label']} | {mmm(mode['records_per_s'])} | "
                   f"{mmm(mode['mb_per_s'], '{:.2f}')} | {mode['seconds']['median']:.1f} | "
                   f"{f'{sorted(f2l)[len(f2l) // 2]:.1f}' if f2l else '-'} | "
                   f"{f'{later[len(later) // 2]:,.0f}' if later else '-'} | {loads(mode['runs'])} |")
    r = tp["ratios"]
    out += ["", f"Ratios of the medians: **c/b = {r['c/b']:.2f}**, **c/a = {r['c/a']:.2f}**, b/a = {r['b/a']:.2f}."]
    if tp.get("paired_ratios"):
        out.append("Ratios within each repetition (a, b and c ran back to back), min / median / max: "
                   + ", ".join(f"{k} {mmm(v, '{:.2f}')}" for k, v in tp["paired_ratios"].items()) + ".")
    out.append("")
    eos_runs = tp["modes"]["c"]["runs"]
    if eos_runs and eos_runs[0].get("sink_ms_total"):
        out.append(_eos_breakdown(eos_runs))
        out.append("")
    return out


def _eos_breakdown(runs: list[dict[str, Any]]) -> str:
    """The exactly-once sink's phases as shares of its batch time, summed over the runs."""
    batch = sum(r["seconds"] for r in runs) * 1000
    parts = {k: sum(r["sink_ms_total"][k] for r in runs) for k in ("collect_ms", "produce_ms", "commit_ms")}
    rest = batch - sum(parts.values())
    shares = ", ".join(f"{k.removesuffix('_ms')} {v / batch:.0%}" for k, v in parts.items())
    return (f"Exactly-once batch time, summed over its runs: {shares}, Spark and the sink's protocol reads "
            f"(offsets, group offsets, WAL and commit log) {rest / batch:.0%}.")


def latency_section(lat: dict[str, Any]) -> list[str]:
    """End-to-end latency per mode (the modes without a measurement are left out)."""
    out = ["## Latency", "",
           "Produce time (in the value) to visibility for a `read_committed` consumer of the output, "
           "processing-time trigger, steady input rate after a warm-up.", "",
           "| mode | trigger | rate (achieved) | p50 ms | p95 ms | p99 ms | max ms | p99 after first 5 s "
           "| batch ms (median) | rows/batch | load 1m |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for mode, r in lat.items():
        if "latency_ms" not in r:
            continue
        la, late = r["latency_ms"], r.get("latency_ms_after_first_5s") or {}
        out.append(f"| {mode} | {r['trigger_ms']} ms | {r['rate_per_s']:,}/s ({r['achieved_rate_per_s']:,.0f}) "
                   f"for {r['duration_s']} s | {la['p50']:,.0f} | {la['p95']:,.0f} | {la['p99']:,.0f} | "
                   f"{la['max']:,.0f} | {late.get('p99', 0):,.0f} | {r['batch_ms']['median']:,.0f} | "
                   f"{r['rows_per_batch']['median']:,.0f} | {load(r['loadavg_before'])} |")
    out.append("")
    return out


def recovery_section(rec: dict[str, Any]) -> list[str]:
    """Each repetition of the kill-and-recover run, its phases and the total's spread."""
    out = ["## Recovery", "",
           f"SIGKILL of the whole job (driver and JVM) by the test-only fault hook `{rec['fault']}` "
           "(batch produced, transaction open), "
           f"{rec['records']:,} input records in batches of {rec['max_offsets_per_trigger']:,}. Clock from the "
           "restart: `eos abort --force` + `eos verify` + `eos run` until the first new committed record is "
           "visible to a `read_committed` consumer. After each run the output was checked exactly once "
           "(no id lost or duplicated).", "",
           "| rep | total s | eos abort s | eos verify s | eos run -> first output s | query started after s "
           "| replayed batch ms | LSO pinned before | verdict | load 1m |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(rec["runs"], 1):
        out.append(f"| {i} | {r['seconds']:.1f} | {r['abort_s']:.1f} | {r['verify_s']:.1f} | "
                   f"{r['restart_to_first_output_s']:.1f} | "
                   f"{'-' if r['query_started_after_s'] is None else format(r['query_started_after_s'], '.1f')} | "
                   f"{r['first_batch_ms'] or '-'} | {r['lso_pinned_before_restart']} | {r['verify_verdict']} | "
                   f"{load(r['loadavg_before'])} |")
    out += ["", f"Total: {mmm(rec['seconds'], '{:.1f}')} s (min / median / max).", ""]
    return out


def scale_section(sc: dict[str, Any]) -> list[str]:
    """The Airflow-side work (verification, transactions, pre-flight) at scale, one row per function timed."""
    out = ["## Scale of the Airflow-side work", "", "| what | size | ms (min / median / max) | load 1m |",
           "|---|---|---|---|"]
    ver = sc.get("verification")
    if ver and "scenarios" in ver:
        size = f"{ver['partitions']:,} partitions ({ver['topics']} topics)"
        for verdict, s in ver["scenarios"].items():
            out.append(f"| `verify_checkpoint` ({verdict}) | {size} | {mmm(s['verify_checkpoint_ms'], '{:,.1f}')}"
                       f" | {load(s['loadavg_before'])} |")
            out.append(f"| `verification_text` ({verdict}, {s['rendered_chars'] / 1e6:.1f} M chars) | {size} | "
                       f"{mmm(s['render_ms'], '{:,.1f}')} | |")
    txn = sc.get("transactions")
    if txn and "find_lingering_ms" in txn:
        out.append(f"| `find_lingering` ({txn['lingering_found']:,} found) | {txn['transactions']:,} transactions "
                   f"| {mmm(txn['find_lingering_ms'], '{:,.1f}')} | {load(txn['loadavg_before'])} |")
        out.append(f"| `find_hanging` ({txn['hanging_found']:,} found) | {txn['partitions']:,} partitions x 2 "
                   f"producers | {mmm(txn['find_hanging_ms'], '{:,.1f}')} | |")
        out.append(f"| `plan_abort` ({txn['plan_rows']:,} rows) | both of the above | "
                   f"{mmm(txn['plan_abort_ms'], '{:,.1f}')} | |")
    pf = sc.get("preflight_synthetic")
    if pf and "evaluate_ms" in pf:
        out.append(f"| pre-flight `evaluate` ({pf['rules']} rules, synthetic facts) | {pf['input_topics']} input "
                   f"topics | {mmm(pf['evaluate_ms'], '{:,.1f}')} | {load(pf['loadavg_before'])} |")
    live = sc.get("preflight_live")
    if live and "gather_facts_ms" in live:
        size = f"{live['input_topics']} real topics x {live['partitions_per_topic']} partitions"
        out.append(f"| pre-flight `gather_facts` (live, bench broker) | {size} | "
                   f"{mmm(live['gather_facts_ms'], '{:,.0f}')} | {load(live['loadavg_before'])} |")
        out.append(f"| pre-flight `evaluate` on the live facts | {size} | "
                   f"{mmm(live['evaluate_ms'], '{:,.1f}')} | |")
    out.append("")
    return out


def cluster_section(cluster: dict[str, Any], input_note: str = "") -> list[str]:
    """The executor writers on a standalone cluster (its table's owner, :mod:`bench.cluster`, renders it)."""
    from bench.cluster import markdown as cluster_markdown  # at call time: it imports the throughput bench's runner

    return [f"## Executor writers on a standalone cluster{input_note}", "", *cluster_markdown(cluster), ""]


def memory_section(mem: dict[str, Any]) -> list[str]:
    """Peak RSS: per writer and batch size (:mod:`bench.memory`'s table) or, in older results, per mode."""
    if "sizes" in mem:
        return ["## Memory", "", *_memory_by_size(mem), ""]
    if "exactly-once" not in mem:
        return []
    out = ["## Memory", "",
           f"Peak RSS (`VmHWM`) for one batch of max_offsets_per_trigger = {mem['batch_records']:,} records "
           f"({mem['batch_bytes'] / 1e6:.0f} MB of keys and values), sampled every 0.2 s over the job's process "
           "tree.", "", "| mode | Python driver MB | spark-submit JVM MB | batch ms | load 1m |",
           "|---|---|---|---|---|"]
    for mode in ("exactly-once", "at-least-once"):
        r = mem.get(mode) or {}
        peaks = r.get("peak_rss_mb", {})
        out.append(f"| {mode} | {peaks.get('driver_python', '-')} | {peaks.get('jvm', '-')} | "
                   f"{r.get('batch_ms', '-')} | {load(r.get('loadavg_before'))} |")
    out.append("")
    return out


def _memory_by_size(mem: dict[str, Any]) -> list[str]:
    """The memory bench's own table (its owner renders it), with a line saying what was measured."""
    try:
        from bench.memory import markdown as memory_markdown

        table = memory_markdown(mem)
    except Exception as exc:  # the table's owner changes it independently: say so rather than fail the report
        table = [f"(the memory table could not be rendered: {type(exc).__name__}: {exc})"]
    return [f"Peak RSS (`VmHWM`) of the Python driver and the driver JVM for one batch of {mem['sizes'][0]:,} and of "
            f"{mem['sizes'][1]:,} records, per writer, sampled every 0.2 s over the job's process tree.", "", *table]


def profile_section(prof: dict[str, Any]) -> list[str]:
    """Spark's phases, the sink's cProfile and the JVM's samples of one profiled run per mode."""
    modes = prof["modes"]
    out = ["## Profile: where a batch's time goes", "",
           f"One run per mode on the throughput input ({prof['records']:,} records, batches of "
           f"{prof['max_offsets_per_trigger']:,}) in a standalone driver (`python -m bench.profile_sink`) with a "
           "Java Flight Recording of the Spark JVM; `spark-read-only` is the job's source with Spark's `noop` "
           "sink, i.e. what Spark alone costs. Phases are Spark's `durationMs` summed over all batches "
           "(share of `triggerExecution`); `addBatch` is the sink (`foreachBatch`).", "",
           "| mode | records/s | trigger s | addBatch | queryPlanning | walCommit | commitOffsets | latestOffset "
           "| JVM CPU % of machine | machine busy % | load 1m |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for mode, data in modes.items():
        share, cpu = data["phases"]["share"], data["jvm"].get("cpu") or {}
        out.append(f"| {mode} | {data['records_per_s']:,.0f} | {data['phases']['seconds']['triggerExecution']:.1f} | "
                   + " | ".join(f"{share[k]:.0%}" for k in ("addBatch", "queryPlanning", "walCommit", "commitOffsets",
                                                             "latestOffset"))
                   + f" | {cpu.get('jvm_percent_of_machine', '-')} | {cpu.get('machine_busy_percent', '-')} | "
                   f"{load(data.get('loadavg_before'))} |")
    eos = modes.get("exactly-once") or {}
    if eos.get("key_functions"):
        out += ["", f"Exactly-once sink, cProfile of the Python driver (sink total {eos['sink_total_s']:.1f} s; "
                f"{prof['note']}):", "", "| function | calls | cumulative s | share of sink |", "|---|---|---|---|"]
        for label, row in eos["key_functions"].items():
            share = row["cumulative_s"] / eos["sink_total_s"] if eos["sink_total_s"] else 0
            out.append(f"| {label} | {row['calls']:,} | {row['cumulative_s']:.2f} | {share:.0%} |")
    # Ordered by the largest share in any mode. A dict, not a set, gathers the categories: a set's order of
    # strings changes with each process' hash seed, and the sort being stable, ties (2% and 2%) then swapped
    # rows between two renders of the same JSON.
    seen = dict.fromkeys(c for d in modes.values() for c in d["jvm"].get("executor_task_categories", {}))
    categories = sorted(seen, key=lambda c: -max(d["jvm"]["executor_task_categories"].get(c, 0)
                                                  for d in modes.values()))
    if categories:
        out += ["", "Spark JVM, executor task threads: share of Java execution samples by what the top frames run:",
                "", "| category | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
        for category in categories:
            out.append(f"| {category} | " + " | ".join(
                f"{d['jvm']['executor_task_categories'].get(category, 0):.0%}" for d in modes.values()) + " |")
        out.append("| (samples) | " + " | ".join(f"{d['jvm']['executor_task_samples']:,}" for d in modes.values())
                   + " |")
    out.append("")
    return out
