"""What a fault aims at, found live: the window (an open transaction of the pipeline), PySpark Python
workers and executor JVMs under the soak's own Spark workers, the group coordinator, an output leader."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

import psutil
from confluent_kafka import IsolationLevel, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.broker_state import BrokerInfo
from airflow_provider_eos.devstack.spark_cluster import SparkCluster
from soak.job import JobControl, log
from soak.schedule import choose

WINDOW_S = 90
_EXECUTOR = "CoarseGrainedExecutorBackend"


@dataclass
class FaultContext:
    kafka: LocalKafka
    cluster: BrokerInfo
    spark: SparkCluster
    job: JobControl

    @property
    def nodes(self) -> list[int]:
        return [n.node_id for n in self.cluster.nodes]


class Window:
    """What was seen right before the fault: ONGOING transactions (or, for the control, output growth)."""

    def __init__(self) -> None:
        self.ongoing: list[Any] = []
        self.seen_at: float | None = None
        self.output_growing = False

    def evidence(self, fault_at: float) -> dict[str, Any]:
        age = None if self.seen_at is None else round((fault_at - self.seen_at) * 1000)
        return {"open_transaction": bool(self.ongoing),
                "ongoing": [f"{t.transactional_id}@{t.coordinator_id}" for t in self.ongoing][:6],
                "seen_ms_before_fault": age, "output_growing": self.output_growing}


def prefix_transactions(ctx: FaultContext) -> list[Any]:
    """Every transactional id under the pipeline's prefix, as DescribeTransactions reports it."""
    from airflow_provider_eos.kafka.transactions_admin import admin_client, scan_prefix

    spec = ctx.job.harness.spec
    with admin_client(spec, timeout_ms=10_000) as admin:
        return scan_prefix(admin, spec.transactional_id_prefix)


def ongoing(ctx: FaultContext) -> list[Any]:
    """The pipeline's transactions that are open right now (state ONGOING)."""
    from airflow_provider_eos.core.transactions import TxnState

    return [t for t in prefix_transactions(ctx) if t.state is TxnState.ONGOING]


def _admin(ctx: FaultContext) -> AdminClient:
    # log_level 3: a client made per probe logs at info level when it is dropped; only errors are news.
    return AdminClient({**ctx.cluster.client_settings(), "log_level": 3})


def _output_end(ctx: FaultContext) -> int:
    """The output's high watermarks, summed: grows while the (at-least-once) job writes."""
    harness = ctx.job.harness
    request = {TopicPartition(harness.output_topic, p): OffsetSpec.latest() for p in range(harness.partitions)}
    admin = _admin(ctx)  # held until the futures resolve: a dropped client never completes them
    result = admin.list_offsets(request, isolation_level=IsolationLevel.READ_UNCOMMITTED, request_timeout=10)
    return sum(future.result(15).offset for future in result.values())


def wait_window(ctx: FaultContext, timeout_s: float = WINDOW_S, restarts: int = 3) -> Window:
    """Poll until the pipeline has a transaction open (exactly-once) or its output grows (control);
    a job found dead meanwhile is recovered and restarted (at most ``restarts`` times)."""
    window = Window()
    deadline = time.monotonic() + timeout_s
    baseline = None
    while time.monotonic() < deadline:
        if not ctx.job.alive():
            if restarts <= 0:
                return window
            restarts -= 1
            ctx.job.ensure_running()
            deadline = max(deadline, time.monotonic() + timeout_s / 2)
        try:
            if ctx.job.exactly_once:
                window.ongoing = ongoing(ctx)
                if window.ongoing:
                    window.seen_at = time.time()
                    return window
            else:
                end = _output_end(ctx)
                if baseline is not None and end > baseline:
                    window.output_growing, window.seen_at = True, time.time()
                    return window
                baseline = end if baseline is None else baseline
        except Exception as exc:  # a broker restarting from the previous fault: keep looking
            log(f"  (window probe failed: {type(exc).__name__}: {str(exc)[:120]})")
            time.sleep(1)
        time.sleep(0.1)
    return window


# -- targets --------------------------------------------------------------------------------------


def _spark_descendants(ctx: FaultContext) -> list[psutil.Process]:
    """Every process under the soak's own Spark workers (executors and their Python workers)."""
    info = ctx.spark.recorded()
    found: list[psutil.Process] = []
    for pid in info.pids("worker") if info else []:
        with contextlib.suppress(psutil.Error):
            found += psutil.Process(pid).children(recursive=True)
    return found


def _cmdline(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def python_workers(ctx: FaultContext) -> list[psutil.Process]:
    """PySpark Python workers: forks of a ``pyspark.daemon`` (or ``pyspark.worker`` processes); the daemon
    itself only when it has no forked worker."""
    procs = [p for p in _spark_descendants(ctx) if "pyspark.daemon" in _cmdline(p) or "pyspark.worker" in _cmdline(p)]
    pids = {p.pid for p in procs}
    forked = [p for p in procs if _parent_pid(p) in pids or "pyspark.worker" in _cmdline(p)]
    return forked or procs


def _parent_pid(process: psutil.Process) -> int | None:
    try:
        return process.ppid()
    except psutil.Error:
        return None


def executors(ctx: FaultContext) -> list[psutil.Process]:
    return [p for p in _spark_descendants(ctx) if _EXECUTOR in _cmdline(p)]


def group_coordinator(ctx: FaultContext) -> int:
    admin = _admin(ctx)
    group = ctx.job.harness.spec.group_id
    return admin.describe_consumer_groups([group])[group].result(30).coordinator.id


def output_leader(ctx: FaultContext, pick: float) -> tuple[int, int]:
    topic = ctx.job.harness.output_topic
    admin = _admin(ctx)
    partitions = admin.describe_topics(TopicCollection([topic]))[topic].result(30).partitions
    partition = choose([p.id for p in partitions], pick)
    return partition, next(p.leader.id for p in partitions if p.id == partition)
