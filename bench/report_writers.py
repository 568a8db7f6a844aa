"""The report's sections for the two exactly-once writers (issue 10): throughput per master, ratios, scaling,
control records, and the notes on where the time goes. Results from before the writers (one ``c``
mode, one master) are rendered by :mod:`bench.report_tables` as before; :func:`is_writers_format` tells them apart.
"""

from __future__ import annotations

from typing import Any

from bench.ratios import CPU_TARGET, EXECUTOR_LETTERS, RATIO_TARGETS, SPARK_LETTERS, master, mode_key
from bench.report_cells import loads, mmm
from bench.report_machine import cpu_bound_lines, cpu_lines, request_lines
from bench.spark_phases import phase_lines

#: Latency modes of the exactly-once writers, newest first; ``exactly-once`` is the pre-writers driver sink.
EOS_LATENCY_MODES = ("exactly-once executors", "exactly-once driver", "exactly-once")


def is_writers_format(tp: dict[str, Any] | None) -> bool:
    return bool(tp) and "cores" in tp


def _median(values: list[float]) -> float | None:
    values = sorted(values)
    return values[len(values) // 2] if values else None


#: The ratios a target row reads: in total, and without batch 0 (the fields of a throughput or cluster result).
_RATIO_BASES = (("", "ratios", "paired_ratios"),
                (" in steady state (without batch 0)", "steady_ratios", "steady_paired_ratios"))


def ratio_targets(tp: dict[str, Any]) -> list[dict[str, Any]]:
    """Target rows for c_e/b and c_e/n on every master (same shape as :func:`bench.report_targets.evaluate_targets`)."""
    from bench.ratios import target_verdict

    rows = []
    bases = _RATIO_BASES
    for cores in tp["cores"]:
        for name, target in RATIO_TARGETS.items():
            key = f"{name}@{cores}"
            for suffix, medians, paired in bases:
                if medians not in tp:
                    continue
                value = tp[medians].get(key)
                passed, note = target_verdict(value, (tp.get(paired) or {}).get(key), target)
                rows.append({"key": key + (":steady" if suffix else ""),
                             "target": f"{name} on {master(cores)}{suffix} >= {target}", "value": value,
                             "measured": "-" if value is None else f"{value:.2f}", "pass": passed, "note": note})
        rows.append(_cpu_target(tp, cores))
    return rows


def cluster_ratio_targets(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """The ratio targets on the standalone cluster's two workers (absent: the cluster bench did not run)."""
    from bench.ratios import target_verdict

    rows = []
    for name, target in RATIO_TARGETS.items():
        key = f"{name}@2"
        for suffix, medians, paired in _RATIO_BASES:
            if key not in (cluster.get(medians) or {}):
                continue
            value = cluster[medians][key]
            passed, note = target_verdict(value, (cluster.get(paired) or {}).get(key), target)
            rows.append({"key": f"cluster:{key}" + (":steady" if suffix else ""),
                         "target": f"{name} on the standalone cluster, 2 workers{suffix} >= {target}",
                         "value": value, "measured": "-" if value is None else f"{value:.2f}", "pass": passed,
                         "note": note})
    return rows


def _cpu_target(tp: dict[str, Any], cores: int) -> dict[str, Any]:
    mine, base, limit = CPU_TARGET
    figure = "cpu_us_per_record"
    values = [((tp["modes"].get(mode_key(letter, cores)) or {}).get(figure) or {}).get("median")
              for letter in (mine, base)]
    ratio = None if None in values or not values[1] else values[0] / values[1]
    return {"key": f"cpu:{mine}/{base}@{cores}", "target": f"CPU µs per record of {mine} <= {limit}x {base}'s on "
            f"{master(cores)}", "value": ratio, "measured": "-" if ratio is None else f"{ratio:.2f}",
            "pass": None if ratio is None else ratio <= limit,
            "note": "not measured" if ratio is None else f"medians {values[0]:.1f} vs {values[1]:.1f} µs per record "
            "(all the job's processes, start-up included)"}


def throughput_section(tp: dict[str, Any], title: str = "Throughput") -> list[str]:
    inp, modes = tp["input"], tp["modes"]
    reps = tp.get("repetitions") or max((m["records_per_s"]["n"] for m in modes.values()), default=0)
    settings = tp.get("producer_settings")
    out = [f"## {title}", "",
           f"Same input for every mode: {inp['records']:,} records, {inp['avg_record_bytes']:.0f} bytes on average "
           f"(key + value, {inp['bytes'] / 1e6:.0f} MB), {inp['topic_partitions']} partitions; batches / "
           f"transactions of max_offsets_per_trigger = {inp['max_offsets_per_trigger']:,} records; {reps} "
           f"repetition(s), each running {', '.join(tp['order'])} back to back"
           + (f", after {tp['warm_up_rounds']} warm-up round(s) of the same runs that no figure counts (they warm "
              "the fresh broker's JIT on every mode's work)" if tp.get("warm_up_rounds") else "")
           + ". Spark jobs via `eos run --master "
           "local[N]`; (n) is `eos run --mode noop` (benchmark only: the same source and transform into Spark's "
           f"`noop` writer, writing nothing). Timing: {tp['timing_basis']}."
           + (" Producer settings of every mode that writes (in the spec's kafka settings): "
              + ", ".join(f"{k}={v}" for k, v in settings.items()) + "." if settings else "")
           + (" Source settings of every Spark mode (the job's Kafka source, beyond the spec's): "
              + ", ".join(f"{k}={v}" for k, v in tp["source_settings"].items()) + "."
              if tp.get("source_settings") else "")
           + (" Arrow: " + ", ".join(f"{k.rsplit('.', 1)[1]} {v}" for k, v in tp["arrow_settings"].items()) + "."
              if tp.get("arrow_settings") else ""), "",
           "| mode | records/s (min / median / max) | MB/s (median) | processing s (median) | records/s without "
           "batch 0 (median) | output markers per batch | load 1m |", "|---|---|---|---|---|---|---|"]
    for mode in modes.values():
        runs = [r for r in mode["runs"] if r]
        later = _median([r["after_first_batch_records_per_s"] for r in runs
                         if r.get("after_first_batch_records_per_s")])
        markers = _median([r["markers_per_batch"] for r in runs if r.get("markers_per_batch") is not None])
        out.append(f"| {mode['label']} | {mmm(mode['records_per_s'])} | "
                   f"{mmm(mode['mb_per_s'], '{:.2f}').split(' / ')[1] if runs else '-'} | "
                   f"{'-' if mode['seconds']['median'] is None else format(mode['seconds']['median'], '.1f')} | "
                   f"{'-' if later is None else format(later, ',.0f')} | {'-' if markers is None else markers} | "
                   f"{loads(mode['runs'])} |")
    out.append("")
    out += ["Ratios of records/s: of the medians, and per repetition (the runs of one repetition ran back to back) "
            "min / median / max.", "", "| ratio | " + " | ".join(master(c) for c in tp["cores"]) + " |",
            "|---|" + "---|" * len(tp["cores"])]
    names = sorted({k.split("@")[0] for k in tp["ratios"]}, key=lambda n: (n not in RATIO_TARGETS, n))
    for name in names:
        cells = []
        for cores in tp["cores"]:
            key = f"{name}@{cores}"
            value, paired = tp["ratios"].get(key), tp["paired_ratios"].get(key)
            cells.append("-" if value is None else f"**{value:.2f}** ({mmm(paired, '{:.2f}')})"
                         if name in RATIO_TARGETS else f"{value:.2f} ({mmm(paired, '{:.2f}')})")
        target = f" (target >= {RATIO_TARGETS[name]})" if name in RATIO_TARGETS else ""
        out.append(f"| {name}{target} | " + " | ".join(cells) + " |")
    steady, steady_paired = tp.get("steady_ratios") or {}, tp.get("steady_paired_ratios") or {}
    for name in RATIO_TARGETS:
        keys = [f"{name}@{c}" for c in tp["cores"]]
        cells = ["-" if steady.get(k) is None else f"{steady[k]:.2f} ({mmm(steady_paired.get(k), '{:.2f}')})"
                 for k in keys]
        if any(cell != "-" for cell in cells):
            out.append(f"| {name} without batch 0 (no target; warm-up left out) | " + " | ".join(cells) + " |")
    out += [*cpu_lines(tp), *cpu_bound_lines(tp), *request_lines(tp), *phase_lines(tp)]
    if tp.get("scaling"):
        low, high = min(tp["cores"]), max(tp["cores"])
        out += ["", f"Scaling from {master(low)} to {master(high)} (records/s on {high} cores over {low}): "
                + ", ".join(f"{letter} {s['of_medians']:.2f} (per repetition {mmm(s['paired'], '{:.2f}')})"
                            for letter, s in tp["scaling"].items() if s.get("of_medians") is not None) + "."]
    out.append("")
    out += breakdown_lines(tp)
    if tp.get("failures"):
        out += ["", "Failed runs (left out of the statistics): "
                + "; ".join(f"{f['mode']} rep {f['repetition']}: {f['error'].splitlines()[0][:160]}"
                            for f in tp["failures"]) + "."]
    out.append("")
    return out


def breakdown_lines(tp: dict[str, Any]) -> list[str]:
    """Where the exactly-once batch time goes, per writer and master, from the runs' own log lines."""
    out = []
    for cores in tp["cores"]:
        for letter in ("c_d", "c_dp", *EXECUTOR_LETTERS):
            figures = batch_breakdown(tp, letter, cores)
            if figures:
                out.append(f"- {letter} on {master(cores)}: " + figures["text"])
    return (["Exactly-once batch time, summed over the runs:", "", *out, ""]) if out else []


def batch_breakdown(tp: dict[str, Any], letter: str, cores: int) -> dict[str, Any] | None:
    mode = tp["modes"].get(mode_key(letter, cores))
    runs = [r for r in (mode or {}).get("runs", []) if r and r.get("sink_ms_total")]
    if not runs:
        return None
    batch_ms = sum(r["seconds"] for r in runs) * 1000
    records = sum(r["records"] for r in runs)
    noop = tp["modes"].get(mode_key("n", cores)) or {}
    noop_runs = [r for r in noop.get("runs", []) if r]
    noop_us = (sum(r["seconds"] for r in noop_runs) * 1e6 / sum(r["records"] for r in noop_runs)) if noop_runs else None
    per_record = batch_ms * 1000 / records
    result: dict[str, Any] = {"us_per_record": per_record, "noop_us_per_record": noop_us, "letter": letter}
    if letter in EXECUTOR_LETTERS and all("tasks_ms_total" in r for r in runs):
        tasks = sum(r["tasks_ms_total"] for r in runs)
        produce = sum(r["task_ms_total"]["produce_ms"] for r in runs)
        commit = sum(r["task_ms_total"]["commit_ms"] for r in runs)
        opening = sum(r["task_ms_total"].get("open_ms", 0) for r in runs)
        inits = sum(r["task_ms_total"].get("init_ms", 0) for r in runs)
        # Runs recorded before the field waited for all of their opening.
        waited = sum(r["task_ms_total"].get("open_wait_ms", r["task_ms_total"].get("open_ms", 0)) for r in runs)
        batch0_open = sum(r.get("batch0_task_ms_total", {}).get("open_ms", 0) for r in runs)
        where = "the executor JVM" if letter == "c_e" else "Python workers"
        slots = tasks * cores
        batches = sum(r.get("batches") or 0 for r in runs)
        result.update(tasks_share=tasks / batch_ms, produce_slot_share=produce / slots if slots else None,
                      commit_slot_share=commit / slots if slots else None,
                      rest_ms_per_batch=(batch_ms - tasks) / batches if batches else None)
        job = "the JVM writer's data-source write" if letter == "c_e" else "`mapInArrow`"
        text = (f"the write job ({job}: read, transform, produce and commit in the tasks) {tasks / batch_ms:.0%}"
                f", the rest (Spark's per-batch work, plan read and WAL cross-check, driver commits) "
                f"{1 - tasks / batch_ms:.0%}; of the write job's {cores} task slot(s), tasks spent "
                f"{produce / slots:.0%} reading and producing (of which {opening / slots:.0%} opening the "
                f"transaction: producer inits {inits / slots:.0%}; {batch0_open / slots:.0%} in batch 0; "
                f"{waited / slots:.0%} waited for before the first row) and {commit / slots:.0%} committing "
                "(the rest of the slot time is task launch, "
                "the data source's setup, or a slot idle while the batch's last task runs)" if slots
                else "no task time recorded")
        replaced = sum(r.get("producers_replaced") or 0 for r in runs)
        created = sum(r.get("producers_created") or 0 for r in runs)
        task_count = sum(r.get("task_lines") or 0 for r in runs)
        result.update(producers_replaced=replaced, producers_created=created)
        if task_count and all("producers_created" in r for r in runs):
            text += (f"; {created} of {task_count} tasks created their producer (the first in {where}, or the "
                     f"partition's last batch ran in another one), {replaced} found a cached one fenced")
        elif task_count and all("producers_replaced" in r for r in runs):
            text += (f"; {replaced} of {task_count} tasks found their cached producer fenced by another holder "
                     "and re-initialised it")
    else:
        parts = {k: sum(r["sink_ms_total"][k] for r in runs) for k in ("collect_ms", "produce_ms", "commit_ms")}
        result.update({k: v / batch_ms for k, v in parts.items()})
        text = ", ".join(f"{k.removesuffix('_ms')} {v / batch_ms:.0%}" for k, v in parts.items()) + \
            f", Spark and the sink's protocol reads {1 - sum(parts.values()) / batch_ms:.0%}"
    text += f"; {per_record:.1f} µs per record"
    if noop_us:
        text += f" against {noop_us:.1f} µs for Spark alone (n), i.e. the sink adds {per_record - noop_us:+.1f} µs"
    result["text"] = text + "."
    return result


def control_section(cr: dict[str, Any]) -> list[str]:
    out = ["## Control records (executor writers' cost)", "",
           f"{cr['records']:,} records per run on {cr['master']}, {cr['repetitions']} repetition(s). Markers are "
           "counted: the output topic's end offsets minus the records written, divided by the batches. The bound "
           "is (input partitions) x (output partitions) per batch: one marker per output partition per "
           "transaction, one transaction per input partition with data; each transaction also writes one marker "
           "into the sink group's `__consumer_offsets` partition (the offset commit), counted in transactions "
           "per batch.", "",
           "| input x output | batch | mode | records/s (min / median / max) | records/s without batch 0 (median) "
           "| batches | transactions / batch | markers / batch (bound) | markers / 1,000 records |",
           "|---|---|---|---|---|---|---|---|---|"]
    for shape, data in cr["shapes"].items():
        for batch, by_key in data["batches"].items():
            for key, s in by_key.items():
                if not s["runs"]:
                    continue

                def med(field: str, s: dict[str, Any] = s) -> str:
                    value = (s.get(field) or {}).get("median")
                    return "-" if value is None else f"{value:,g}"

                bound = f" ({s['bound_per_batch']})" if s.get("bound_per_batch") else ""
                later = (s.get("after_first_batch_records_per_s") or {}).get("median")
                out.append(f"| {shape} | {int(batch):,} | {key} | {mmm(s['records_per_s'])} | "
                           f"{'-' if later is None else format(later, ',.0f')} | {med('batches')} | "
                           f"{med('transactions_per_batch')} | {med('markers_per_batch')}{bound} | "
                           f"{med('markers_per_1000_records')} |")
    if cr.get("failures"):
        out += ["", "Failed runs: " + "; ".join(f"{f['shape']} batch {f['batch']} {f['mode']}: "
                                                 f"{f['error'].splitlines()[0][:160]}" for f in cr["failures"]) + "."]
    out.append("")
    return out


def _rate(cr: dict[str, Any], shape: str, batch: str, key: str) -> float | None:
    """Median records/s without batch 0 (its warm-up would swamp a short run), else with it."""
    s = ((cr["shapes"].get(shape) or {}).get("batches", {}).get(batch) or {}).get(key) or {}
    return (s.get("after_first_batch_records_per_s") or {}).get("median") or (s.get("records_per_s") or {}).get(
        "median")


def control_note(cr: dict[str, Any]) -> str | None:
    """How the markers grow with the shape and how the batch size amortizes them."""
    parts = []
    for shape, data in cr["shapes"].items():
        batches = sorted(data["batches"], key=int)
        key_e, key_d, key_b = (f"{x}@2" for x in ("c_e", "c_d", "b"))
        cells = []
        for batch in batches:
            s = data["batches"][batch].get(key_e) or {}
            markers = (s.get("markers_per_1000_records") or {}).get("median")
            ce, cd, b = (_rate(cr, shape, batch, k) for k in (key_e, key_d, key_b))
            text = f"batch {int(batch):,}: {markers if markers is not None else '-'} markers per 1,000 records"
            if ce:
                text += f", c_e {ce:,.0f} rec/s without batch 0"
            if ce and b:
                text += f", c_e/b {ce / b:.2f}"
            if ce and cd:
                text += f", c_e/c_d {ce / cd:.2f}"
            cells.append(text)
        parts.append(f"{shape}: " + "; ".join(cells))
    if not parts:
        return None
    return ("- **control records (no target).** " + ". ".join(parts) + ". The markers per batch follow input x "
            "output; per record they fall with the batch size, and the records/s ratio against the driver writer "
            "and Spark's writer on the same shape shows what the extra transactions cost (each adds an "
            "`init`/offsets/commit round trip to the coordinator and a marker per touched partition).")


def writers_notes(results: dict[str, Any], targets: dict[str, dict[str, Any]]) -> list[str]:
    """Notes on the writers' ratios: where the time goes and what would close each missed target."""
    tp = results.get("throughput") or {}
    notes: list[str] = []
    if not is_writers_format(tp):
        return notes
    for cores in tp["cores"]:
        found = [targets[k] for k in (f"c_e/b@{cores}", f"c_e/n@{cores}") if k in targets]
        if not found:
            continue
        shown = ", ".join(f"{t['key'].split('@')[0]} = {t['measured']} ({'pass' if t['pass'] else 'miss'})"
                          for t in found)
        parts = [f"- **{master(cores)}: {shown}.**"]
        e = batch_breakdown(tp, "c_e", cores)
        if e:
            parts.append("Executor writers: " + e["text"])
        b = tp["modes"].get(mode_key("b", cores))
        n = tp["modes"].get(mode_key("n", cores))
        b_rate, n_rate = ((m or {}).get("records_per_s", {}).get("median") for m in (b, n))
        if b_rate and n_rate:
            parts.append(f"Spark's own writer (b) reaches {b_rate / n_rate:.2f} of Spark alone (n) on the same master.")
        if any(t["pass"] is False for t in found):
            parts.append(closing_text(e))
        notes.append(" ".join(parts))
    if tp.get("scaling"):
        s = tp["scaling"]
        shown = ", ".join(f"{letter} {s[letter]['of_medians']:.2f}" for letter in SPARK_LETTERS
                          if letter in s and s[letter]["of_medians"] is not None)
        text = (f"- **scaling {master(min(tp['cores']))} -> {master(max(tp['cores']))} (no target):** {shown}. "
                "Spark's read (n) and writer (b) run in the tasks and scale with task slots; the driver writer's "
                "produce runs in one Python thread on the driver whatever the cores. On a 2-core machine shared "
                "by the broker and the bench, a second core is not a free core: scaling below 2 is expected.")
        ce, b = (s.get(x, {}).get("of_medians") for x in ("c_e", "b"))
        if ce is not None and b is not None and ce < b - 0.2:
            text += (f" The executor writers scale worse than Spark's writer ({ce:.2f} against {b:.2f}): a cost that "
                     "grows with parallel tasks rather than with records, e.g. producers re-initialised when a "
                     "partition's task moves to the other Python worker, and more concurrent coordinator round trips.")
        notes.append(text)
    return notes


def closing_text(e: dict[str, Any] | None) -> str:
    """What would close a missed c_e target, ordered by where the measured time went."""
    fixes = []
    if e and e.get("letter") == "c_e" and (e.get("produce_slot_share") or 0) >= 0.5:
        fixes.append("the tasks' read-and-produce loop fills most task-slot time, as in Spark's own writer (the same "
                     "row read and Java producer); what the exactly-once tasks add is opening the transaction "
                     "(shown above: producer inits are paid once per executor and partition, mostly in batch 0) "
                     "and the commit round trips, which larger batches amortise")
    elif e and (e.get("produce_slot_share") or 0) >= 0.5:
        fixes.append("the tasks' read-and-produce loop fills most task-slot time: one Python worker per core turns "
                     "Arrow rows into Python values and calls `produce()` once per record, on top of Spark's own "
                     "read; a vectorised produce path (record batches without headers or dead letters handed to "
                     "librdkafka with fewer Python calls) and Arrow batches sized to the producer's queue would cut "
                     "it")
    if e and e.get("producers_replaced"):
        fixes.append("tasks of one input partition move between the executor's Python workers, so a cached "
                     "producer is often found fenced and re-initialised (an `init_transactions` and a failed "
                     "`send_offsets` round trip each): fewer Python workers per executor or a worker-independent "
                     "producer cache (one per executor) would keep each partition's producer warm")
    if e and e.get("produce_slot_share") is not None and e["produce_slot_share"] < 0.5 \
            and (e.get("tasks_share") or 0) >= 0.5:
        fixes.append("most of the write job's task-slot time is outside the tasks' produce loop: task launch, "
                     "Python worker start and client setup (admin client, group-metadata consumer, "
                     "`init_transactions` of a producer new to the worker) and slots idle while a batch's last task "
                     "runs; fewer, larger batches and warm workers (no re-init) shrink it")
    if e and (e.get("commit_slot_share") or 0) >= 0.1:
        fixes.append("commits take a visible share of the task slots: every input partition's transaction waits "
                     "for its commit round trips; larger batches amortise them (see the control-record table)")
    if e and e.get("rest_ms_per_batch") and (1 - (e.get("tasks_share") or 0)) >= 0.3:
        fixes.append(f"about {e['rest_ms_per_batch']:,.0f} ms per batch pass outside the write job (Spark's "
                     "planning, WAL and commit log, the plan read and WAL cross-check, the driver's commit of "
                     "partitions without a task): larger batches amortise it; the plan read is one call into "
                     "the executor writer's jar per batch (design note 51), so most of it is Spark's own "
                     "per-batch work, which its own writer pays too")
    if not fixes:
        fixes.append("no single phase dominates; the figures are within the machine's noise, re-measure on a "
                     "quiet machine")
    return "What would close it: " + "; ".join(fixes) + "."
