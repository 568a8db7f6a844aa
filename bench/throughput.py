"""Throughput on the same input: the raw producer, and each Spark job on ``local[1]`` and ``local[2]``.

One input topic (``records`` records of about 200 bytes, 4 partitions) is produced once. Each
repetition runs every mode once, back to back (interleaved, so a load spike on the shared machine
hits all of them alike), each into a fresh output topic with a fresh checkpoint, group and
transactional id prefix; output topics are deleted after each run. Modes (:mod:`bench.ratios`):

* (a) confluent-kafka's transactional producer with the sink's own producer config
  (:func:`sink_producer_config`, given :data:`bench.specs.PRODUCER_SETTINGS` like every mode),
  producing the same records from Python lists in transactions of ``max_offsets_per_trigger``
  records: begin, produce, flush, commit (no ``send_offsets_to_transaction``). Timed from the
  first ``begin_transaction`` to the last commit; ``init_transactions`` is excluded.
* (b) at-least-once (Spark's Kafka writer), (n) Spark's ``noop`` sink (``eos run --mode noop``,
  benchmark only: the same source and transform, writing nothing: what Spark alone costs),
  (c_d) exactly-once with ``writers: driver`` (one transaction per batch), (c_e) with
  ``writers: executors`` (one transaction per input partition, in the tasks: the default JVM
  writer) and (c_p) the same with ``executor_writer: python`` (in the tasks' Python workers); each once per
  master (``eos run --master local[1]`` and ``local[2]``), identity transform, available-now
  trigger. Their processing time is the sum of Spark's ``triggerExecution`` durations over all
  batches (the ``EOS-PROGRESS`` lines), which excludes JVM startup, SparkSession creation and
  query start; the time from the first batch's start to the last batch's end is recorded too.

For the exactly-once runs the output topic's end offsets minus the records written count the
transaction markers (control records) the run left in the output topic.

Warm-up rounds run every mode before the measured repetitions and count in no figure. The bench's broker is
a fresh JVM: its JIT compiles the code each kind of work first reaches, and the transaction coordinator, the
group coordinator's transactional offsets and the markers only once exactly-once runs come. Without the rounds
the first exactly-once runs paid that compilation on the cores Spark shares (a perf profile of the broker: its
C2 compiler threads took 1.3 CPU s during the second c_e run, 0.2 during the b run before it), which a
deployment's long-running broker does not. Every run records the broker's compilation time
(``broker_jit_ms``), the warm-up rounds' included.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from airflow_provider_eos.kafka.settings import sink_producer_config
from airflow_provider_eos.kafka.settings.java import spark_source_defaults
from bench.broker_requests import BrokerRequests, median_per_batch, per_batch, served
from bench.job import NOOP, Job, processing_time
from bench.kafka_io import create_topics, delete_topics, end_offsets, produce, unique
from bench.measure import loadavg, log, summarize
from bench.process_tree import listener_pid
from bench.ratios import LETTERS, STEADY_RATE, label, ordered_keys, ratios, scaling, split_key
from bench.records import bench_records, record_bytes
from bench.spark_phases import median_phase_ms, steady_phase_ms
from bench.specs import AT_LEAST_ONCE, EXACTLY_ONCE, PRODUCER_SETTINGS, SPARK_CONF, write_spec

PARTITIONS = 4
#: Local cores of the Spark jobs (``eos run --master local[N]``), in run order.
CORES = (1, 2)
#: Per Spark letter: ``eos run --mode`` and the spec's ``writers``.
JOB_MODES = {"b": (AT_LEAST_ONCE, "auto"), "n": (NOOP, "auto"), "c_d": (EXACTLY_ONCE, "driver"),
             "c_e": (EXACTLY_ONCE, "executors"), "c_p": (EXACTLY_ONCE, "executors"),
             "c_dp": (EXACTLY_ONCE, "driver")}
#: Per Spark letter whose executor writers are not the default (JVM) ones: the spec's ``executor_writer``.
EXECUTOR_WRITERS = {"c_p": "python", "c_dp": "python"}


#: A task's times (``EOS-TASK``): ``open_ms`` (of which ``init_ms``) is the part of ``produce_ms`` spent opening its
#: transaction; ``open_wait_ms`` the part of that the task waited for before its first row (the JVM writer opens
#: while Spark reads the first rows; runs recorded before it have none).
TASK_TIMES = ("produce_ms", "commit_ms", "open_ms", "init_ms", "open_wait_ms")
ARROW_SETTINGS = ("spark.sql.execution.arrow.maxRecordsPerBatch", "spark.sql.execution.arrow.maxBytesPerBatch")
#: CPU of all the job's processes per input record: in all (start-up included), and in steady state
#: (after batch 0). The raw producer (a) has none: it runs in the bench's own process. Then the broker's
#: over the same runs: it shares the machine's cores with Spark, so what it spends appending a mode's
#: output (nothing for the noop sink) is taken from that mode's throughput.
CPU_FIGURES = ("cpu_us_per_record", "cpu_steady_us_per_record",
               "broker_cpu_us_per_record", "broker_cpu_steady_us_per_record")


#: What a warm-up run records: enough to see the broker settle, not a measurement.
WARM_UP_FIGURES = ("records_per_s", "seconds", "broker_jit_ms", "broker_cpu_steady_us_per_record",
                   "loadavg_before")


def _round_name(rep: int, repetitions: int, warm_up_round: int | None, warm_up_rounds: int) -> str:
    if warm_up_round:
        return f"warm-up round {warm_up_round}/{warm_up_rounds} (not counted)"
    return f"rep {rep + 1}/{repetitions}"


@dataclass
class ThroughputInput:
    topic: str
    records: list[tuple[bytes, bytes]]
    bytes: int
    #: Every k-th record carries a header (0: none does).
    headers_every: int = 0


def prepare_input(bootstrap: str, count: int, *, headers_every: int = 0) -> ThroughputInput:
    topic = create_topics(bootstrap, [unique("bench-tp-in")], PARTITIONS)[0]
    records = bench_records(count)
    started = time.perf_counter()
    produce(bootstrap, topic, records, headers_every=headers_every)
    log(f"throughput input: {count:,} records into {topic} in {time.perf_counter() - started:.1f}s"
        + (f", a header on every {headers_every}th" if headers_every else ""))
    return ThroughputInput(topic, records, record_bytes(records), headers_every)


def raw_producer(bootstrap: str, work_dir: Path, data: ThroughputInput, batch: int, rep: int,
                 requests: BrokerRequests | None = None) -> dict[str, Any]:
    """(a): the transactional producer alone, same records, same transaction size as the job's batches.

    With ``requests``, the broker's compilation time over the timed transactions is recorded too.
    """
    name = unique(f"tp-a{rep}")
    output = create_topics(bootstrap, [f"{name}-out"], PARTITIONS)[0]
    spec, _ = write_spec(work_dir, bootstrap, name=name, input_topics=[data.topic], output_topic=output,
                         max_offsets_per_trigger=batch)
    producer = Producer(sink_producer_config(spec))
    producer.init_transactions(30)
    keys = [k for k, _ in data.records]
    values = [v for _, v in data.records]
    load = loadavg()
    jit_before = requests.compilation_ms_or_none() if requests else None
    started = time.perf_counter()
    transactions = 0
    for start in range(0, len(values), batch):
        producer.begin_transaction()
        for i in range(start, min(start + batch, len(values))):
            while True:
                try:
                    producer.produce(output, value=values[i], key=keys[i])
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.flush(60)
        producer.commit_transaction(60)
        transactions += 1
    seconds = time.perf_counter() - started
    jit = _compiled_since(requests, jit_before)
    written = sum(end_offsets(bootstrap, output, PARTITIONS, committed=True).values())
    delete_topics(bootstrap, [output])
    # Each committed transaction adds one commit marker per partition it wrote to.
    if written < len(values):
        raise RuntimeError(f"raw producer: {written} offsets in {output}, expected >= {len(values)}")
    return {"seconds": round(seconds, 3), "records": len(values), "transactions": transactions,
            "loadavg_before": load, **({"broker_jit_ms": jit} if jit is not None else {})}


def _compiled_since(requests: BrokerRequests | None, before: int | None) -> int | None:
    """The broker's JIT milliseconds since ``before`` (``None`` when either read failed or there is no reader)."""
    if requests is None or before is None:
        return None
    after = requests.compilation_ms_or_none()
    return None if after is None else after - before


def task_lines(job: Job) -> list[dict[str, Any]]:
    """The executor writers' ``EOS-TASK`` lines (their Python workers' stderr reaches the job's log)."""
    found = []
    for line in job.text().splitlines():
        if "EOS-TASK {" in line:
            try:
                found.append(json.loads(line.split("EOS-TASK ", 1)[1]))
            except ValueError:
                continue  # two workers' lines interleaved: a lost sample, not a failed run
    return found


def sink_figures(job: Job, progress: list[dict[str, Any]]) -> dict[str, Any]:
    """Where an exactly-once run's batch time went: the sink's phases, and for executor writers the tasks'."""
    batches = [p for _, p in job.tagged("EOS-BATCH")]
    figures: dict[str, Any] = {
        "sink_ms_total": {k: sum(p.get(k) or 0 for p in progress) for k in ("collect_ms", "produce_ms", "commit_ms")},
        "rows_out": sum(p.get("rows_out") or 0 for p in progress),
    }
    extras = [b.get("extra") or {} for b in batches]
    if any("tasks_ms" in e for e in extras):
        tasks = task_lines(job)
        figures["tasks_ms_total"] = sum(e.get("tasks_ms") or 0 for e in extras)
        figures["tasks_per_batch"] = summarize([e.get("tasks") or 0 for e in extras], 1)
        figures["driver_commits"] = sum(e.get("partitions_committed_by_driver") or 0 for e in extras)
        # A task whose partition last ran in another Python worker creates (and initialises) a producer:
        # the worker's cached one is dropped without asking (created), or found fenced (replaced).
        figures["producers_created"] = sum(e.get("producers_created") or 0 for e in extras)
        figures["producers_replaced"] = sum(e.get("producers_replaced") or 0 for e in extras)
        figures["task_ms_total"] = {k: sum(t.get(k) or 0 for t in tasks) for k in TASK_TIMES}
        figures["task_ms"] = {k: summarize([t.get(k) or 0 for t in tasks], 0) for k in TASK_TIMES}
        figures["batch0_task_ms_total"] = {k: sum(t.get(k) or 0 for t in tasks if t.get("batch_id") == 0)
                                           for k in TASK_TIMES}
        figures["task_lines"] = len(tasks)
    return figures


def job_run(bootstrap: str, work_dir: Path, data: ThroughputInput, key: str, batch: int, rep: int,
            timeout_s: float, *, master: str | None = None, spark_conf: dict[str, str] | None = None,
            metrics: dict[str, Any] | None = None, requests: BrokerRequests | None = None) -> dict[str, Any]:
    """One Spark mode (``b@2``, ``c_e@1``...) over the whole input topic, fresh checkpoint/group/output.

    The number after ``@`` is the local cores (``local[N]``) unless ``master`` names another master,
    whose share the caller sets in ``spark_conf`` (e.g. ``spark.cores.max`` on a standalone cluster).
    With ``requests``, the broker's requests served and its compilation time during the run are recorded too.
    """
    letter, cores = split_key(key)
    mode, writers = JOB_MODES[letter]
    master = master or f"local[{cores}]"
    name = unique(f"tp-{letter.replace('_', '')}{cores}-{rep}")
    output = f"{name}-out"
    if mode != NOOP:
        create_topics(bootstrap, [output], PARTITIONS)
    _, spec_file = write_spec(work_dir, bootstrap, name=name, input_topics=[data.topic], output_topic=output,
                              max_offsets_per_trigger=batch, writers=writers, spark_conf=spark_conf,
                              executor_writer=EXECUTOR_WRITERS.get(letter), metrics=metrics)
    load = loadavg()
    before = requests.counts_or_none() if requests else None
    jit_before = requests.compilation_ms_or_none() if requests else None
    job = Job(spec_file, mode, work_dir / name / "job.log", master=master,
              broker_pid=listener_pid(bootstrap)).start(sample_memory=True)
    returncode = job.wait(timeout_s)
    after = requests.counts_or_none() if requests and before is not None else None
    jit = _compiled_since(requests, jit_before)
    during = served(before, after) if before is not None and after is not None else None
    wall = time.time() - job.started_at
    progress = job.progress()
    rows_in = sum(p.get("rows_in") or 0 for _, p in progress)
    if returncode != 0 or rows_in != len(data.records):
        raise RuntimeError(f"{key} run {name}: exit {returncode}, rows_in {rows_in} of {len(data.records)}; "
                           f"log {job.log_path}\n{job.tail()}")
    timing = processing_time(progress)
    later = [p for _, p in progress[1:]]
    later_s = sum(p.get("batch_ms") or 0 for p in later) / 1000
    cpu = job.cpu_seconds(progress)
    later_rows = sum(p.get("rows_in") or 0 for p in later)
    result: dict[str, Any] = {
        "seconds": timing["sum_trigger_s"], "first_to_last_s": timing["first_to_last_s"],
        "after_first_batch_records_per_s": round(sum(p.get("rows_in") or 0 for p in later) / later_s, 1)
        if later_s else None,
        "process_wall_s": round(wall, 1), "batches": len(progress), "records": rows_in,
        "batch_ms": summarize([p.get("batch_ms") or 0 for _, p in progress], 0),
        "peak_rss_mb": job.memory.peaks_mb() if job.memory else {}, "loadavg_before": load,
        "master": master, "writers": writers if mode == EXACTLY_ONCE else None,
        **cpu,
        "cpu_us_per_record": round(cpu["cpu_s"] / rows_in * 1e6, 2) if cpu["cpu_s"] and rows_in else None,
        "cpu_steady_us_per_record": round(cpu["cpu_steady_s"] / later_rows * 1e6, 2)
        if cpu["cpu_steady_s"] and later_rows else None,
        "broker_cpu_us_per_record": round(cpu["broker_cpu_s"] / rows_in * 1e6, 2)
        if cpu.get("broker_cpu_s") and rows_in else None,
        "broker_cpu_steady_us_per_record": round(cpu["broker_cpu_steady_s"] / later_rows * 1e6, 2)
        if cpu.get("broker_cpu_steady_s") and later_rows else None,
        "spark_phase_ms": steady_phase_ms(later),
    }
    if during is not None:
        # The bench's own chores (topic creation, end offsets) run outside this window.
        result["broker_requests"] = during
        result["broker_requests_per_batch"] = per_batch(during, len(progress))
    if jit is not None:
        result["broker_jit_ms"] = jit
    if mode == NOOP:
        return result
    end = end_offsets(bootstrap, output, PARTITIONS, committed=True)
    delete_topics(bootstrap, [output])
    written = sum(end.values())
    if written < rows_in:
        raise RuntimeError(f"{key} run {name}: {written} offsets in the output, expected >= {rows_in}")
    if mode == EXACTLY_ONCE:
        result.update(sink_figures(job, [p for _, p in progress]))
        # Every offset of the output that is not a record is a transaction marker (control record).
        result["output_markers"] = written - result["rows_out"]
        result["markers_per_batch"] = round(result["output_markers"] / max(1, len(progress)), 1)
    return result


def run(bootstrap: str, work_dir: Path, *, records: int, batch: int, repetitions: int,
        data: ThroughputInput | None = None, cores: tuple[int, ...] = CORES,
        headers_every: int = 0, letters: tuple[str, ...] | None = None,
        warm_up_rounds: int = 0) -> tuple[dict[str, Any], ThroughputInput]:
    """Every mode of ``letters`` on ``cores``, ``repetitions`` times interleaved, after ``warm_up_rounds`` rounds
    of the same runs that no figure counts (the module's docstring says why)."""
    data = data or prepare_input(bootstrap, records, headers_every=headers_every)
    keys = ordered_keys(cores, letters)
    runs: dict[str, list[dict[str, Any] | None]] = {key: [] for key in keys}
    failures: list[dict[str, Any]] = []
    timeout_s = 600 + records / 500
    requests = BrokerRequests.attach_or_none(listener_pid(bootstrap), work_dir)
    warm_up: list[dict[str, Any]] = []
    # Negative repetitions are the warm-up rounds: run and recorded alike, left out of every figure.
    for rep in range(-warm_up_rounds, repetitions):
        warm_up_round = rep + warm_up_rounds + 1 if rep < 0 else None
        for key in keys:
            log(f"throughput {_round_name(rep, repetitions, warm_up_round, warm_up_rounds)}: {label(key)}")
            try:
                if key == "a":
                    outcome = raw_producer(bootstrap, work_dir, data, batch, rep, requests)
                else:
                    outcome = job_run(bootstrap, work_dir, data, key, batch, rep, timeout_s, requests=requests)
            except Exception as exc:  # one failed run must not lose the others' hour of measurements
                log(f"  {key} FAILED: {exc}")
                error = str(exc)[:4000]
                if warm_up_round:
                    warm_up.append({"mode": key, "round": warm_up_round, "failed": error})
                else:
                    failures.append({"mode": key, "repetition": rep + 1, "error": error})
                    runs[key].append(None)
                continue
            outcome["records_per_s"] = round(outcome["records"] / outcome["seconds"], 1)
            outcome["mb_per_s"] = round(data.bytes / outcome["seconds"] / 1e6, 3)
            if warm_up_round:
                warm_up.append({"mode": key, "round": warm_up_round, **{k: outcome.get(k) for k in WARM_UP_FIGURES}})
            else:
                runs[key].append(outcome)
            log(f"  ({key}) {outcome['records_per_s']:,.0f} rec/s, {outcome['mb_per_s']:.2f} MB/s over "
                f"{outcome['seconds']:.1f}s (load {outcome['loadavg_before']['1m']}"
                + (f", broker JIT {outcome['broker_jit_ms']:,} ms" if "broker_jit_ms" in outcome else "") + ")")
    summary = {}
    for key, items in runs.items():
        done = [r for r in items if r]
        letter, key_cores = split_key(key)
        summary[key] = {"label": label(key), "letter": letter, "description": LETTERS[letter], "cores": key_cores,
                        "records_per_s": summarize([r["records_per_s"] for r in done], 1),
                        STEADY_RATE: summarize([r[STEADY_RATE] for r in done if r.get(STEADY_RATE)], 1),
                        "mb_per_s": summarize([r["mb_per_s"] for r in done], 3),
                        "seconds": summarize([r["seconds"] for r in done], 3),
                        **{figure: summarize([r[figure] for r in done if r.get(figure)], 2)
                           for figure in CPU_FIGURES},
                        "broker_requests_per_batch": median_per_batch(done),
                        "spark_phase_ms": median_phase_ms(done),
                        "broker_jit_ms": summarize([r["broker_jit_ms"] for r in done if "broker_jit_ms" in r], 0),
                        "runs": items}
    found = ratios(summary, runs, cores)
    steady = ratios(summary, runs, cores, STEADY_RATE)
    result = {
        "input": {"topic_partitions": PARTITIONS, "records": len(data.records), "bytes": data.bytes,
                  "avg_record_bytes": round(data.bytes / len(data.records), 1), "max_offsets_per_trigger": batch,
                  "headers_every": data.headers_every},
        "producer_settings": PRODUCER_SETTINGS,
        # What the job's Kafka source sets beyond the spec's settings, alike for every Spark mode.
        "source_settings": spark_source_defaults(),
        # What bounds the Arrow batches the writers hand to mapInArrow (docs/design-notes.md, note 27).
        "arrow_settings": {key: SPARK_CONF.get(key, "Spark's default") for key in ARROW_SETTINGS},
        "timing_basis": "sum of Spark triggerExecution over all batches (EOS-PROGRESS batch_ms); "
                        "raw producer: first begin_transaction to last commit",
        "cores": list(cores), "repetitions": repetitions, "order": keys,
        "warm_up_rounds": warm_up_rounds, "warm_up": warm_up,
        "modes": summary,
        "ratios": found["of_medians"],
        # The runs of one repetition ran back to back under about the same load: their ratios pair them.
        "paired_ratios": found["paired"],
        # The same without batch 0 (JVM warm-up, Python workers' start, producers' init_transactions).
        "steady_ratios": steady["of_medians"], "steady_paired_ratios": steady["paired"],
        "scaling": scaling(summary, runs, min(cores), max(cores)) if len(cores) > 1 else {},
        "failures": failures,
    }
    return result, data

