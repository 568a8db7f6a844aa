"""The control-record cost of the executor writers (docs/architecture.md), measured on 4x4 and 16x16 partitions.

The executor writers commit one transaction per input partition with data, and every commit
writes one transaction marker (a control record) into each output partition the transaction
touched, plus one into the ``__consumer_offsets`` partition of the sink group (the offsets sent
to the transaction). Per batch that is up to (input partitions with data) x (output partitions
touched) markers in the output topic, against (output partitions touched) for the driver writer's
one transaction per batch; larger batches amortize them over more records.

For each shape (input x output partitions) an input topic of that many partitions holds
``records`` records (keys spread over 997 users, so every input partition's rows reach every
output partition); each batch size and each mode runs once per repetition into a fresh output
topic. The markers are counted, not estimated: the output topic's end offsets (after the job,
no transaction open) minus the records written. Transactions per batch come from the
``EOS-BATCH`` lines (tasks, and the driver's commit of partitions without a task).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.job import Job, processing_time
from bench.kafka_io import create_topics, delete_topics, end_offsets, produce, unique
from bench.measure import loadavg, log, summarize
from bench.ratios import label, split_key
from bench.records import bench_record
from bench.specs import write_spec
from bench.throughput import JOB_MODES, sink_figures

#: (input partitions, output partitions) of the measured shapes.
SHAPES = ((4, 4), (16, 16))
MASTER_CORES = 2


def count_markers(end: Mapping[int, int], records_written: int) -> int:
    """Control records in a topic that holds ``records_written`` records and ends at ``end`` (all from offset 0).

    :raises ValueError: when fewer offsets than records (the topic was not read to its end, or records were lost).
    """
    offsets = sum(end.values())
    if offsets < records_written:
        raise ValueError(f"{offsets} offsets hold fewer than the {records_written} records written")
    return offsets - records_written


def marker_cost(*, markers: int, batches: int, records: int, transactions: int, input_partitions: int,
                output_partitions: int) -> dict[str, Any]:
    """Per-batch and per-record figures of one run's markers, next to the bound (input x output per batch)."""
    bound = input_partitions * output_partitions
    per_batch = markers / batches if batches else 0.0
    return {
        "markers": markers,
        "markers_per_batch": round(per_batch, 1),
        "bound_per_batch": bound,
        "share_of_bound": round(per_batch / bound, 3) if bound else None,
        "transactions_per_batch": round(transactions / batches, 1) if batches else 0.0,
        "markers_per_1000_records": round(markers * 1000 / records, 2) if records else None,
        "marker_share_of_offsets": round(markers / (markers + records), 4) if markers + records else None,
    }


def _records(count: int) -> Iterator[tuple[bytes, bytes]]:
    return (bench_record(i) for i in range(count))


def _one_run(bootstrap: str, work_dir: Path, source: str, shape: tuple[int, int], key: str, batch: int,
             records: int, rep: int) -> dict[str, Any]:
    letter, cores = split_key(key)
    mode, writers = JOB_MODES[letter]
    inputs, outputs = shape
    name = unique(f"cr-{inputs}x{outputs}-{letter.replace('_', '')}-{batch}-{rep}")
    output = create_topics(bootstrap, [f"{name}-out"], outputs)[0]
    _, spec_file = write_spec(work_dir, bootstrap, name=name, input_topics=[source], output_topic=output,
                              max_offsets_per_trigger=batch, writers=writers)
    load = loadavg()
    job = Job(spec_file, mode, work_dir / name / "job.log", master=f"local[{cores}]").start()
    code = job.wait(600 + records / 500)
    progress = [p for _, p in job.progress()]
    rows_in = sum(p.get("rows_in") or 0 for p in progress)
    if code != 0 or rows_in != records:
        raise RuntimeError(f"control records {name}: exit {code}, rows_in {rows_in} of {records}; "
                           f"log {job.log_path}\n{job.tail()}")
    end = end_offsets(bootstrap, output, outputs, committed=True)
    delete_topics(bootstrap, [output])
    seconds = processing_time(job.progress())["sum_trigger_s"]
    later_s = sum(p.get("batch_ms") or 0 for p in progress[1:]) / 1000
    result: dict[str, Any] = {"seconds": seconds, "records": rows_in, "batches": len(progress),
                              "records_per_s": round(rows_in / seconds, 1) if seconds else None,
                              # Batch 0 carries the warm-up (JIT, Python workers, producers' init_transactions).
                              "after_first_batch_records_per_s": round(
                                  sum(p.get("rows_in") or 0 for p in progress[1:]) / later_s, 1) if later_s else None,
                              "batch_ms": summarize([p.get("batch_ms") or 0 for p in progress], 0),
                              "loadavg_before": load}
    if letter.startswith("c"):
        figures = sink_figures(job, progress)
        batches = [b for _, b in job.tagged("EOS-BATCH")]
        extras = [b.get("extra") or {} for b in batches]
        # Executor writers: a transaction per task plus the driver's for partitions without a task (if any);
        # the driver writer: one per batch that produced.
        if letter == "c_e":
            transactions = sum((e.get("partitions_produced") or 0) + (1 if e.get("partitions_committed_by_driver")
                                                                        else 0) for e in extras)
        else:
            transactions = sum(1 for b in batches if b.get("action") == "produce")
        result.update(figures)
        result.update(marker_cost(markers=count_markers(end, figures["rows_out"]), batches=len(progress),
                                  records=figures["rows_out"], transactions=transactions,
                                  input_partitions=inputs, output_partitions=outputs))
    return result


def run(bootstrap: str, work_dir: Path, *, records: int, batches: Sequence[int], repetitions: int,
        letters: Sequence[str] = ("c_e", "c_d", "b"), shapes: Sequence[tuple[int, int]] = SHAPES) -> dict[str, Any]:
    """Every shape x batch size x mode, ``repetitions`` times (modes interleaved within a repetition)."""
    keys = [f"{letter}@{MASTER_CORES}" for letter in letters]
    result: dict[str, Any] = {"records": records, "batch_sizes": list(batches), "master": f"local[{MASTER_CORES}]",
                              "repetitions": repetitions, "shapes": {}, "failures": []}
    for shape in shapes:
        inputs, outputs = shape
        source = create_topics(bootstrap, [unique(f"bench-cr-in-{inputs}")], inputs)[0]
        produce(bootstrap, source, _records(records))
        runs: dict[str, dict[str, list[dict[str, Any]]]] = {str(b): {k: [] for k in keys} for b in batches}
        for rep in range(repetitions):
            for batch in batches:
                for key in keys:
                    log(f"control records {inputs}x{outputs}, batch {batch:,}, rep {rep + 1}/{repetitions}: "
                        f"{label(key)}")
                    try:
                        outcome = _one_run(bootstrap, work_dir, source, shape, key, batch, records, rep)
                    except Exception as exc:  # keep the other shapes' measurements
                        log(f"  FAILED: {exc}")
                        result["failures"].append({"shape": f"{inputs}x{outputs}", "batch": batch, "mode": key,
                                                   "repetition": rep + 1, "error": str(exc)[:4000]})
                        continue
                    runs[str(batch)][key].append(outcome)
                    log(f"  {outcome['records_per_s']:,.0f} rec/s; markers/batch "
                        f"{outcome.get('markers_per_batch', '-')} (load {outcome['loadavg_before']['1m']})")
        delete_topics(bootstrap, [source])
        result["shapes"][f"{inputs}x{outputs}"] = {
            "input_partitions": inputs, "output_partitions": outputs,
            "batches": {batch: {key: summarize_runs(items) for key, items in by_key.items()}
                        for batch, by_key in runs.items()},
        }
    return result


def summarize_runs(items: list[dict[str, Any]]) -> dict[str, Any]:
    """min / median / max of a mode's runs on one shape and batch size (markers are the same every run)."""
    summary: dict[str, Any] = {"runs": items,
                               "records_per_s": summarize([r["records_per_s"] for r in items if r["records_per_s"]],
                                                          1)}
    later = [r["after_first_batch_records_per_s"] for r in items if r.get("after_first_batch_records_per_s")]
    summary["after_first_batch_records_per_s"] = summarize(later, 1)
    for field in ("markers_per_batch", "transactions_per_batch", "markers_per_1000_records", "batches"):
        values = [r[field] for r in items if r.get(field) is not None]
        if values:
            summary[field] = summarize(values, 2)
    if items and items[0].get("bound_per_batch") is not None:
        summary["bound_per_batch"] = items[0]["bound_per_batch"]
    return summary
