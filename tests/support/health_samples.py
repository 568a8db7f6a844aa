"""Health samples and windows built by hand for the rules' unit tests (tests/unit/test_health_*.py).

Times are seconds after ``T0``; the thresholds ``TH`` are small so windows stay readable:
warn after 20s, stop after 40s, hang and linger after 10s, an input partition hangs after 30s.
"""

from __future__ import annotations

from collections.abc import Sequence

from airflow_provider_eos.core.health import (
    Finding,
    HealthReport,
    HealthSample,
    HealthThresholds,
    InputPartitionSample,
    LagStatus,
    LagWindow,
    OutputPartitionSample,
    VerificationSample,
    evaluate,
)
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import Transaction, TxnState

T0 = 1_700_000_000_000
SECOND = 1_000
IN0 = TopicPartition("orders", 0)
IN1 = TopicPartition("orders", 1)
OUT0 = TopicPartition("orders-out", 0)
PREFIX = "orders-eos"
IN_SYNC = VerificationSample(verdict="IN_SYNC", ok=True)

TH = HealthThresholds(
    warn_after_ms=20 * SECOND, stop_after_ms=40 * SECOND, hang_after_ms=10 * SECOND, lingering_after_ms=10 * SECOND,
    input_hang_after_ms=30 * SECOND,
)


def sample(
    t_s: float,
    inputs: Sequence[InputPartitionSample] = (),
    *,
    outputs: Sequence[OutputPartitionSample] = (),
    commit_s: float | None = None,
    last_committed: int | None = 0,
    verification: VerificationSample | None = IN_SYNC,
    transactions: Sequence[Transaction] = (),
    **fields: object,
) -> HealthSample:
    """A sample at ``T0 + t_s`` seconds; ``commit_s`` is the newest commit's time (default: ``t_s``);
    ``fields`` sets any other field of the sample (``run_active`` ...)."""
    commit_time = T0 + int((t_s if commit_s is None else commit_s) * SECOND)
    return HealthSample(
        taken_at_ms=T0 + int(t_s * SECOND),
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        query_id="q1",
        last_committed=last_committed,
        last_commit_time_ms=None if last_committed is None else commit_time,
        verification=verification,
        transactions=tuple(transactions),
        **fields,
    )


def part(lso: int, committed: int | None, marker: int | None = None, *, tp: TopicPartition = IN0,
         hwm: int | None = None, log_start: int | None = 0, waiting_s: float | None = None) -> InputPartitionSample:
    return InputPartitionSample(
        tp=tp, lso=lso, hwm=lso if hwm is None else hwm, log_start=log_start, committed=committed,
        marker_batch=marker if marker is not None or committed is None else 0,
        waiting_ms=None if waiting_s is None else int(waiting_s * SECOND),
    )


def lag_window(points: Sequence[tuple[float, int, int | None, int | None]]) -> list[HealthSample]:
    """Samples of one partition from ``(t_s, lso, committed, marker)``; commits are always fresh,
    so only the lag rules can judge."""
    return [sample(t, [part(lso, committed, marker)]) for t, lso, committed, marker in points]


def run(samples: Sequence[HealthSample], thresholds: HealthThresholds = TH) -> HealthReport:
    return evaluate(LagWindow(samples), thresholds, pipeline="orders", transactional_id_prefix=PREFIX)


def lag_status(samples: Sequence[HealthSample]) -> LagStatus:
    (row,) = run(samples).partitions
    return row.status


def finding(report: HealthReport, signal: str) -> list[Finding]:
    return [f for f in report.findings if f.signal == signal]


def out(lso: int, hwm: int, tp: TopicPartition = OUT0, role: str = "output") -> OutputPartitionSample:
    return OutputPartitionSample(tp=tp, role=role, lso=lso, hwm=hwm)


def txn(txn_id: str, age_s: float, *, at_s: float = 100, timeout_ms: int = 60_000,
        state: TxnState = TxnState.ONGOING) -> Transaction:
    return Transaction(
        transactional_id=txn_id, state=state, producer_id=7, producer_epoch=0,
        start_time_ms=T0 + int((at_s - age_s) * SECOND), timeout_ms=timeout_ms, partitions=frozenset({OUT0}),
    )


def rich_sample(t_s: float) -> HealthSample:
    """A sample with every field set: two inputs, an output and a DLQ, two transactions, a note."""
    return HealthSample(
        taken_at_ms=T0 + int(t_s * SECOND),
        inputs=(part(100, 40, 3), part(7, None, tp=TopicPartition("orders-eu", 0), log_start=2, hwm=9)),
        outputs=(out(5, 9), out(1, 1, TopicPartition("dlq-x", 0), "dlq")),
        checkpoint_exists=True,
        query_id="q1",
        last_committed=3,
        last_commit_time_ms=T0,
        verification=VerificationSample(verdict="KAFKA_BEHIND", ok=False, next_step="Rewind", note=None),
        transactions=(txn(f"{PREFIX}-0", 3),
                      Transaction(transactional_id="x", state=TxnState.EMPTY, producer_id=1, producer_epoch=2,
                                  start_time_ms=None, timeout_ms=60_000, partitions=frozenset(), coordinator_id=None)),
        notes=("topic 'x' does not exist",),
    )


def spec(**fields) -> PipelineSpec:
    return PipelineSpec(
        name="orders", kafka={"bootstrap.servers": "localhost:9092"}, input_topics=["orders"],
        output_topic="orders-out", group_id="orders-sink", transactional_id_prefix=PREFIX,
        checkpoint_location="/tmp/ckpt", **fields,
    )
