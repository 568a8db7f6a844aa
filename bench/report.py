"""Targets, the markdown table and the PNG chart (:mod:`bench.report_chart`) of one bench run's results."""

from __future__ import annotations

import re
from typing import Any

from bench.report_chart import chart, eos_latency
from bench.report_writers import (
    cluster_ratio_targets,
    control_note,
    control_section,
    is_writers_format,
    ratio_targets,
    throughput_section,
    writers_notes,
)

__all__ = ["TARGETS", "analyze", "chart", "evaluate_targets", "markdown"]

TARGETS = {
    "c/b": ("exactly-once throughput / at-least-once throughput >= 1.0", 1.0),
    "c/a": ("exactly-once throughput / raw transactional producer >= 0.5", 0.5),
    "p99": ("exactly-once p99 latency <= at-least-once p99 + 250 ms (trigger 1 s)", None),
    "scaling": ("scaling of c_e from 1 to 2 standalone workers >= that of b", None),
    "memory": ("driver writer: driver RSS at 10x the batch within 20% of that at 1x", None),
    "recovery": ("recovery (abort + verify + restart until output flows) <= 60 s", 60.0),
    "verify": ("verification of 10,000 partitions <= 5 s", 5000.0),
}


def evaluate_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def add(key: str, value: float | None, passed: bool | None, shown: str, note: str = "") -> None:
        rows.append({"key": key, "target": TARGETS[key][0], "value": value, "measured": shown,
                     "pass": passed, "note": note})

    tp = results.get("throughput")
    if is_writers_format(tp):
        rows += ratio_targets(tp)
    elif tp and "ratios" in tp:
        for key in ("c/b", "c/a"):
            value = tp["ratios"][key]
            paired = (tp.get("paired_ratios") or {}).get(key)
            note = "ratio of the medians"
            if paired and paired["n"] > 1:
                note += f"; per repetition (paired runs) {_mmm(paired, '{:.2f}')} min / median / max"
                if (paired["median"] >= TARGETS[key][1]) != (value >= TARGETS[key][1]):
                    note += ": the paired median disagrees, the result is within the noise of this machine"
            add(key, value, value >= TARGETS[key][1], f"{value:.2f}", note)
    mixed = results.get("throughput_mixed_headers")
    if is_writers_format(mixed):
        every = mixed["input"].get("headers_every")
        rows += [{**row, "key": f"{row['key']}:headers", "target": f"{row['target']} (a header on every {every}th)"}
                 for row in ratio_targets(mixed)]
    lat_mode, lat = eos_latency(results)
    baseline = ((results.get("latency") or {}).get("at-least-once") or {}).get("latency_ms")
    if lat and "latency_ms" in lat:
        p99 = lat["latency_ms"]["p99"]
        if baseline:
            limit = baseline["p99"] + 250
            add("p99", p99, p99 <= limit, f"{p99:,.0f} ms (limit {limit:,.0f} ms)",
                f"{lat_mode} against at-least-once's p99 of {baseline['p99']:,.0f} ms, "
                f"{lat['rate_per_s']:,} rec/s for {lat['duration_s']} s, trigger {lat['trigger_ms']:,} ms")
        else:
            add("p99", p99, None, f"{p99:,.0f} ms", "at-least-once's latency was not measured in this run")
    rows += cluster_ratio_targets(results.get("cluster") or {})
    cluster_scaling = (results.get("cluster") or {}).get("scaling") or {}
    mine, base = (cluster_scaling.get(letter, {}).get("of_medians") for letter in ("c_e", "b"))
    if mine is not None and base is not None:
        add("scaling", mine, mine >= base, f"{mine:.2f}x (b {base:.2f}x)", "median records/s, 2 workers over 1")
    mem = results.get("memory") or {}
    if mem.get("driver_writer_within_bound") is not None:
        growth = ((mem.get("writers") or {}).get("driver") or {}).get("growth") or {}
        sizes = mem.get("sizes") or [0, 0]
        add("memory", growth.get("total"), mem["driver_writer_within_bound"],
            f"{growth.get('total', '-')}x (Python + JVM)", f"{sizes[1]:,} vs {sizes[0]:,} records per batch")
    rec = results.get("recovery")
    if rec and "seconds" in rec:
        median, worst = rec["seconds"]["median"], rec["seconds"]["max"]
        add("recovery", median, median <= 60, f"{median:.1f} s median, {worst:.1f} s max",
            "" if worst <= 60 else "the worst repetition exceeded 60 s")
    ver = (results.get("scale") or {}).get("verification")
    if ver and "worst_median_ms" in ver:
        value = ver["worst_median_ms"]
        add("verify", value, value <= 5000, f"{value:,.0f} ms",
            f"{ver['partitions']:,} partitions, worst of {len(ver['scenarios'])} verdict scenarios")
    return rows


def _memory_by_size(mem: dict[str, Any]) -> list[str]:
    """The memory bench's own table (its owner renders it), with a line saying what was measured."""
    try:
        from bench.memory import markdown as memory_markdown

        table = memory_markdown(mem)
    except Exception as exc:  # the table's owner changes it independently: say so rather than fail the report
        table = [f"(the memory table could not be rendered: {type(exc).__name__}: {exc})"]
    return [f"Peak RSS (`VmHWM`) of the Python driver and the driver JVM for one batch of {mem['sizes'][0]:,} and of "
            f"{mem['sizes'][1]:,} records, per writer, sampled every 0.2 s over the job's process tree.", "", *table]


def _error_line(trace: str) -> str:
    """The exception line of a formatted traceback (its message's first line)."""
    lines = trace.splitlines()
    for line in lines:
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line):
            return line
    return lines[-1] if lines else ""


def _mmm(s: dict[str, Any] | None, fmt: str = "{:,.0f}") -> str:
    if not s or s.get("median") is None:
        return "-"
    return " / ".join(fmt.format(s[k]) for k in ("min", "median", "max"))


def _load(entry: dict[str, Any] | None) -> str:
    return "-" if not entry else f"{entry['1m']:.2f}"


def _loads(runs: list[dict[str, Any]]) -> str:
    values = [r["loadavg_before"]["1m"] for r in runs if r.get("loadavg_before")]
    return "-" if not values else f"{min(values):.2f}-{max(values):.2f}"


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    out = [f"# Benchmarks {meta['date']}{' (quick)' if meta.get('quick') else ''}", ""]
    out.append(f"Command: `{meta['command']}` · commit `{meta.get('git_commit', '?')}` · {meta['machine']} · "
               f"run {meta['started']} to {meta['finished']} ({meta['duration_min']:.0f} min)")
    out.append("")
    protocol = f", {meta['kafka_protocol']}" if meta.get("kafka_protocol") else ""
    out.append(f"Versions: {meta['versions']}. One broker (Kafka {meta['kafka']}{protocol}, KRaft, single node, "
               "started by the bench); jobs via `eos run --master local[2]`"
               + (" (the throughput table: " + " and ".join(f"local[{c}]" for c in results["throughput"]["cores"])
                  + ")" if is_writers_format(results.get("throughput")) else "") + ", `spark.driver.memory=1g`.")
    out.append("")
    out.append(f"Load (`os.getloadavg()` 1-minute, recorded before each measurement): "
               f"{meta['load_summary']}. The machine is shared with other engineers' test runs; "
               "every figure below was measured under that load.")
    out.append("")
    if meta.get("disturbances"):
        out += ["**Disturbed:**", "", *[f"- {line}" for line in meta["disturbances"]], ""]
    if meta.get("reruns"):
        # A bench of the run that failed for a reason outside what it measures, run again on its own.
        out += ["**Run again separately:**", "", *[f"- {line}" for line in meta["reruns"]], ""]
    if results.get("errors"):
        out += ["**Errors:**", ""]
        out += [f"- {name}: {_error_line(error)}" for name, error in results["errors"].items()]
        out.append("")

    targets = results.get("targets") or []
    if targets:
        out += ["## Targets", "", "| target | measured | result | note |", "|---|---|---|---|"]
        for t in targets:
            verdict = "PASS" if t["pass"] else "MISS"
            out.append(f"| {t['target']} | {t['measured']} | **{verdict}** | {t['note']} |")
        out.append("")

    tp = results.get("throughput")
    if is_writers_format(tp):
        out += throughput_section(tp)
    elif tp and "modes" in tp:
        inp = tp["input"]
        out += ["## Throughput", "",
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
            out.append(f"| ({key}) {mode['label']} | {_mmm(mode['records_per_s'])} | "
                       f"{_mmm(mode['mb_per_s'], '{:.2f}')} | {mode['seconds']['median']:.1f} | "
                       f"{f'{sorted(f2l)[len(f2l) // 2]:.1f}' if f2l else '-'} | "
                       f"{f'{later[len(later) // 2]:,.0f}' if later else '-'} | {_loads(mode['runs'])} |")
        r = tp["ratios"]
        out += ["", f"Ratios of the medians: **c/b = {r['c/b']:.2f}**, **c/a = {r['c/a']:.2f}**, b/a = {r['b/a']:.2f}."]
        if tp.get("paired_ratios"):
            out.append("Ratios within each repetition (a, b and c ran back to back), min / median / max: "
                       + ", ".join(f"{k} {_mmm(v, '{:.2f}')}" for k, v in tp["paired_ratios"].items()) + ".")
        out.append("")
        eos_runs = tp["modes"]["c"]["runs"]
        if eos_runs and eos_runs[0].get("sink_ms_total"):
            out.append(_eos_breakdown(eos_runs))
            out.append("")

    mixed = results.get("throughput_mixed_headers")
    if is_writers_format(mixed):
        out += throughput_section(mixed, f"Throughput, input with a header on every "
                                         f"{mixed['input'].get('headers_every')}th record")

    if (results.get("control") or {}).get("shapes"):
        out += control_section(results["control"])

    lat = results.get("latency")
    if lat:
        out += ["## Latency", "",
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
                       f"{r['rows_per_batch']['median']:,.0f} | {_load(r['loadavg_before'])} |")
        out.append("")

    rec = results.get("recovery")
    if rec and "runs" in rec:
        out += ["## Recovery", "",
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
                       f"{_load(r['loadavg_before'])} |")
        out += ["", f"Total: {_mmm(rec['seconds'], '{:.1f}')} s (min / median / max).", ""]

    sc = results.get("scale")
    if sc:
        out += ["## Scale of the Airflow-side work", "", "| what | size | ms (min / median / max) | load 1m |",
                "|---|---|---|---|"]
        ver = sc.get("verification")
        if ver and "scenarios" in ver:
            size = f"{ver['partitions']:,} partitions ({ver['topics']} topics)"
            for verdict, s in ver["scenarios"].items():
                out.append(f"| `verify_checkpoint` ({verdict}) | {size} | {_mmm(s['verify_checkpoint_ms'], '{:,.1f}')}"
                           f" | {_load(s['loadavg_before'])} |")
                out.append(f"| `verification_text` ({verdict}, {s['rendered_chars'] / 1e6:.1f} M chars) | {size} | "
                           f"{_mmm(s['render_ms'], '{:,.1f}')} | |")
        txn = sc.get("transactions")
        if txn and "find_lingering_ms" in txn:
            out.append(f"| `find_lingering` ({txn['lingering_found']:,} found) | {txn['transactions']:,} transactions "
                       f"| {_mmm(txn['find_lingering_ms'], '{:,.1f}')} | {_load(txn['loadavg_before'])} |")
            out.append(f"| `find_hanging` ({txn['hanging_found']:,} found) | {txn['partitions']:,} partitions x 2 "
                       f"producers | {_mmm(txn['find_hanging_ms'], '{:,.1f}')} | |")
            out.append(f"| `plan_abort` ({txn['plan_rows']:,} rows) | both of the above | "
                       f"{_mmm(txn['plan_abort_ms'], '{:,.1f}')} | |")
        pf = sc.get("preflight_synthetic")
        if pf and "evaluate_ms" in pf:
            out.append(f"| pre-flight `evaluate` ({pf['rules']} rules, synthetic facts) | {pf['input_topics']} input "
                       f"topics | {_mmm(pf['evaluate_ms'], '{:,.1f}')} | {_load(pf['loadavg_before'])} |")
        live = sc.get("preflight_live")
        if live and "gather_facts_ms" in live:
            size = f"{live['input_topics']} real topics x {live['partitions_per_topic']} partitions"
            out.append(f"| pre-flight `gather_facts` (live, bench broker) | {size} | "
                       f"{_mmm(live['gather_facts_ms'], '{:,.0f}')} | {_load(live['loadavg_before'])} |")
            out.append(f"| pre-flight `evaluate` on the live facts | {size} | "
                       f"{_mmm(live['evaluate_ms'], '{:,.1f}')} | |")
        out.append("")

    if (results.get("cluster") or {}).get("modes"):
        from bench.cluster import markdown as cluster_markdown

        out += ["## Executor writers on a standalone cluster", "", *cluster_markdown(results["cluster"]), ""]
    mem = results.get("memory")
    if mem and "sizes" in mem:
        out += ["## Memory", "", *_memory_by_size(mem), ""]
    elif mem and "exactly-once" in mem:
        out += ["## Memory", "",
                f"Peak RSS (`VmHWM`) for one batch of max_offsets_per_trigger = {mem['batch_records']:,} records "
                f"({mem['batch_bytes'] / 1e6:.0f} MB of keys and values), sampled every 0.2 s over the job's process "
                "tree.", "", "| mode | Python driver MB | spark-submit JVM MB | batch ms | load 1m |",
                "|---|---|---|---|---|"]
        for mode in ("exactly-once", "at-least-once"):
            r = mem.get(mode) or {}
            peaks = r.get("peak_rss_mb", {})
            out.append(f"| {mode} | {peaks.get('driver_python', '-')} | {peaks.get('jvm', '-')} | "
                       f"{r.get('batch_ms', '-')} | {_load(r.get('loadavg_before'))} |")
        out.append("")

    prof = results.get("profile")
    if prof and "modes" in prof:
        out += _profile_section(prof)
    if results.get("analysis"):
        out += ["## Where the time goes, and what would close the gaps", "", *results["analysis"], ""]
    out += ["Raw figures: the JSON next to this file; chart: the PNG next to it.", ""]
    return "\n".join(out)


def _profile_section(prof: dict[str, Any]) -> list[str]:
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
                   f"{_load(data.get('loadavg_before'))} |")
    eos = modes.get("exactly-once") or {}
    if eos.get("key_functions"):
        out += ["", f"Exactly-once sink, cProfile of the Python driver (sink total {eos['sink_total_s']:.1f} s; "
                f"{prof['note']}):", "", "| function | calls | cumulative s | share of sink |", "|---|---|---|---|"]
        for label, row in eos["key_functions"].items():
            share = row["cumulative_s"] / eos["sink_total_s"] if eos["sink_total_s"] else 0
            out.append(f"| {label} | {row['calls']:,} | {row['cumulative_s']:.2f} | {share:.0%} |")
    categories = sorted({c for d in modes.values() for c in d["jvm"].get("executor_task_categories", {})},
                        key=lambda c: -max(d["jvm"]["executor_task_categories"].get(c, 0) for d in modes.values()))
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


def _eos_breakdown(runs: list[dict[str, Any]]) -> str:
    batch = sum(r["seconds"] for r in runs) * 1000
    parts = {k: sum(r["sink_ms_total"][k] for r in runs) for k in ("collect_ms", "produce_ms", "commit_ms")}
    rest = batch - sum(parts.values())
    shares = ", ".join(f"{k.removesuffix('_ms')} {v / batch:.0%}" for k, v in parts.items())
    return (f"Exactly-once batch time, summed over its runs: {shares}, Spark and the sink's protocol reads "
            f"(offsets, group offsets, WAL and commit log) {rest / batch:.0%}.")


def _spread(tp: dict[str, Any], key: str) -> str:
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
                         f"{alo['batch_ms']['median']:,.0f} ms, so the per-batch Spark cost misses the target here "
                         "with either sink; exactly-once's median batch is "
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
