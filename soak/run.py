"""The soak loop: its own devstack, then per phase a pipeline taken through its scheduled faults.

A phase (one per writer, and the at-least-once control replaying each of them) creates its topics,
produces its input in slices (slice k right before fault k, the last after the last fault), runs
the job in processing-time mode throughout, applies each fault, and, when the job has exited,
recovers and restarts it as the DAG would. At the end it stops the job, drains the rest
available-now and checks the output: duplicates, losses, per-key order, dead letters, verdicts,
transactions left open.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_eos.devstack.jars import KAFKA_VERSION
from soak.checks import OutputCheck, dlq_check, exactly_once_holds
from soak.data import ABORTED_EVERY, MALFORMED_EVERY, EventStream, InputProducer, expected_malformed
from soak.faults import apply
from soak.job import AT_LEAST_ONCE, EXACTLY_ONCE, JobControl, log
from soak.output import log_points, read_topic, read_values
from soak.schedule import DEFAULT_EXECUTOR_WRITER, Phase, Schedule
from soak.targets import FaultContext

PARTITIONS = 3
TRIGGER = "1 second"
# Modest heaps: the machine is shared. Two one-core executors, one per worker, so an executor's loss
# moves its tasks to the other worker.
SPARK_CONF = {"spark.driver.memory": "768m", "spark.sql.shuffle.partitions": "2", "spark.executor.memory": "512m",
              "spark.cores.max": "2", "spark.executor.cores": "1"}


@dataclass(frozen=True)
class Settings:
    """How every phase runs.

    :param batch: the spec's ``max_offsets_per_trigger``.
    :param transaction_timeout_ms: the spec's ``transaction.timeout.ms``.
    :param control: also replay the schedule on the at-least-once writer.
    :param executor_writer: the spec's ``executor_writer`` (``jvm`` or ``python``); it must be the one the
        schedule was built for (:func:`soak.schedule.build`), which chose the faults by it.
    :param kafka_version: the brokers' Kafka version (``--kafka-version``, checked by the devstack).
    """

    batch: int
    transaction_timeout_ms: int = 15_000
    control: bool = True
    executor_writer: str = DEFAULT_EXECUTOR_WRITER
    kafka_version: str = KAFKA_VERSION


@dataclass
class Stack:
    kafka: Any
    cluster: Any
    spark: Any
    master_url: str


@contextlib.contextmanager
def devstack(work_dir: Path, kafka_version: str = KAFKA_VERSION) -> Iterator[Stack]:
    """Three brokers of ``kafka_version`` and a two-worker standalone Spark cluster in ``work_dir``, always
    stopped (a reaper stops them too if this process dies without its cleanup)."""
    from airflow_provider_eos.devstack.broker import LocalKafka
    from airflow_provider_eos.devstack.spark_cluster import SparkCluster

    kafka = LocalKafka(work_dir / "kafka", heap="384m")
    spark = SparkCluster(work_dir / "spark")
    try:
        cluster = kafka.up(stop_with_pid=os.getpid(), brokers=3, kafka_version=kafka_version)
        log(f"brokers up: Kafka {cluster.kafka_version} {cluster.bootstrap_servers}")
        master = spark.up(workers=2, worker_memory="1g", stop_with_pid=os.getpid()).master_url
        log(f"spark standalone up: {master}")
        yield Stack(kafka, cluster, spark, master)
    finally:
        with contextlib.suppress(Exception):
            info = kafka.status()
            for node in info.nodes if info else ():  # a broker left paused would not stop on SIGTERM
                kafka.fault("resume", node.node_id)
        with contextlib.suppress(Exception):
            spark.down()
        kafka.down()
        log("devstack stopped")


def run_schedule(schedule: Schedule, settings: Settings, work_dir: Path, results: dict[str, Any]) -> None:
    """Every phase, then (``settings.control``) the same phases on the at-least-once writer; results go
    into ``results["phases"]`` as they finish, so a failure keeps what was done."""
    if settings.executor_writer != schedule.executor_writer:
        # The schedule's faults were chosen for its executor writer: another one would meet faults with
        # nothing to hit (kill_python_worker on the JVM writer) or miss its equivalent.
        raise ValueError(f"the schedule was built for executor_writer {schedule.executor_writer!r}, the "
                         f"settings ask for {settings.executor_writer!r}")
    runs = [(phase, EXACTLY_ONCE) for phase in schedule.phases]
    if settings.control:
        runs += [(phase, AT_LEAST_ONCE) for phase in schedule.phases]
    with devstack(work_dir / "devstack", settings.kafka_version) as stack:
        results["meta"].update(broker_facts(stack.cluster))
        for phase, mode in runs:
            label = phase.writers if mode == EXACTLY_ONCE else f"control-{phase.writers}"
            log(f"phase {label}: {phase.records:,} records, {len(phase.events)} faults")
            results["phases"].append(run_phase(phase, mode, label, stack, settings, work_dir / label))


def broker_facts(cluster: Any) -> dict[str, str]:
    """The brokers the soak ran on, for its report: the version started (``kafka``) and the transaction
    protocol they announce (``kafka_protocol``); a protocol that cannot be read is said, not fatal."""
    from airflow_provider_eos.kafka.broker_protocol import describe_protocol

    try:
        protocol = describe_protocol(cluster.client_settings())
    except Exception as exc:  # the report says so; the soak's verdict does not depend on it
        protocol = f"not read ({type(exc).__name__}: {exc})"
    return {"kafka": cluster.kafka_version, "kafka_protocol": protocol}


def run_phase(phase: Phase, mode: str, label: str, stack: Stack, settings: Settings, folder: Path) -> dict[str, Any]:
    from tests.support.kafka import wait_for_group_coordinator
    from tests.support.pipeline import PipelineHarness

    folder.mkdir(parents=True)
    client = stack.cluster.client_settings()
    harness = PipelineHarness(client, folder, partitions=PARTITIONS, max_offsets_per_trigger=settings.batch,
                              transaction_timeout_ms=settings.transaction_timeout_ms, trigger=TRIGGER,
                              writers=phase.writers, master=stack.master_url,
                              # Both phases: the executor writers' tasks, the driver writer's spill tasks.
                              executor_writer=settings.executor_writer)
    harness.with_overrides(spark_conf=SPARK_CONF)
    wait_for_group_coordinator(client, harness.input_topic)
    job = JobControl(harness, mode)
    ctx = FaultContext(stack.kafka, stack.cluster, stack.spark, job)
    stream = EventStream(phase.record_seed)
    producer = InputProducer(client, harness.input_topic, PARTITIONS, f"{harness.name}-input")
    faults: list[dict[str, Any]] = []
    started = time.time()
    result: dict[str, Any] = {"label": label, "mode": mode, "writers": phase.writers, "records": phase.records,
                              "executor_writer": settings.executor_writer,
                              "pipeline": harness.name, "started": started}
    try:
        producer.produce(stream.take(phase.slices[0]))
        first = phase.events[0] if phase.events else None
        job.ensure_running(arm_index=first.index if first and first.kind == "slow_transaction" else None)
        for k, event in enumerate(phase.events):
            if k:
                producer.produce(stream.take(phase.slices[k]))
            time.sleep(event.jitter_s)
            faults.append(apply(event, ctx))
        producer.produce(stream.take(phase.slices[-1]))
        job.ensure_running()
        log(f"  {label}: faults done; draining")
        result["drain"] = job.drain(timeout_s=600 + phase.records / 200)
    finally:
        job.kill("phase over")
        result.update(faults=faults, runs=job.runs, recoveries=job.recoveries,
                      input_transactions={"committed": producer.transactions, "aborted": producer.aborted},
                      fault_seconds=round(sum(f.get("seconds", 0) for f in faults), 1))
    result["checks"] = check_phase(harness, job, phase.records, client)
    result["ended"] = time.time()
    result["wall_s"] = round(result["ended"] - started, 1)
    # The timeline: records written per finished batch, from every run's EOS-PROGRESS lines.
    result["progress"] = [(round(t - started, 2), rows) for t, rows in log_points(job.logs())]
    log(f"  {label}: {summarize_checks(result['checks'])} in {result['wall_s']:.0f}s")
    return result


def check_phase(harness: Any, job: JobControl, records: int, client: dict[str, Any]) -> dict[str, Any]:
    check = OutputCheck(records)
    read_topic(client, harness.output_topic, check.add)
    output = check.result()
    dlq = dlq_check(read_values(client, harness.dlq_topic), expected_malformed(records))
    checks: dict[str, Any] = {"output": output, "dlq": dlq, "exactly_once": exactly_once_holds(output, dlq)}
    if job.exactly_once:
        checks["lingering"] = job.lingering()
        checks["final_verdict"] = job.recoveries[-1]["verdict"] if job.recoveries else None
        checks["verdicts_ok"] = all(r["ok"] for r in job.recoveries)
        checks["drain_ok"] = bool(job.runs) and job.runs[-1].get("returncode") == 0
        checks["passed"] = (checks["exactly_once"] and checks["verdicts_ok"] and checks["lingering"]["clean"]
                            and checks["drain_ok"])
    return checks


def summarize_checks(checks: dict[str, Any]) -> str:
    out = checks["output"]
    text = (f"{out['output_records']:,} output records, {out['duplicates']} duplicates, {out['lost']} lost, "
            f"{out['unexpected']} unexpected, {out['order_violations']} order violations, "
            f"DLQ {'exact' if checks['dlq']['exact'] else 'WRONG'}")
    if "passed" in checks:
        text += f", verdicts {'ok' if checks['verdicts_ok'] else 'NOT OK'}, open transactions left: " \
                f"{'none' if checks['lingering']['clean'] else checks['lingering']}"
    return text


INPUT_NOTE = (f"keys user0..user96 (one input partition each), every {MALFORMED_EVERY}th record malformed (to the "
              f"dead-letter topic), an aborted input transaction of 5 junk records after every {ABORTED_EVERY}th "
              f"committed one")
