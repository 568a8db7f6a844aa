"""The driver writer (DESIGN.md 2a): one transaction per batch under ``<prefix>-0``, for any plan.

Per micro-batch: read the planned range from the checkpoint WAL, read the sink group's committed
offsets and markers, let the core decide produce / skip-replay / refuse, and produce the output
plus the batch's end offsets with marker N in ONE transaction, so the whole batch becomes
visible at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eos.core.sink_protocol import BatchAction, decide_batch, offsets_to_commit
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets
from airflow_provider_eos.spark.faults import BatchFaults, FaultPoint
from airflow_provider_eos.spark.record_producer import (
    BatchStats,
    Stopwatch,
    dead_letters,
    output_frame,
    produce_rows,
    require_dlq_topic,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from airflow_provider_eos.spark.sink_clients import SinkClients

__all__ = ["DriverWriter", "collect_output"]


class DriverWriter:
    """Writes each batch in one transaction of the driver's producer ``<prefix>-0``."""

    def __init__(self, clients: SinkClients) -> None:
        self.clients = clients

    def write(self, batch: DataFrame, batch_id: int, faults: BatchFaults) -> BatchStats:
        clients = self.clients
        spec, checkpoint = clients.spec, clients.checkpoint
        query_id = checkpoint.query_id()
        end = checkpoint.planned_offsets(batch_id)
        # The producer first: its init_transactions resolves what a crashed predecessor left open,
        # so the group's offsets read next are stable.
        writer = clients.driver_producer
        writer.producer()
        committed = read_committed_offsets(clients.admin, spec.group_id, end)
        action = decide_batch(query_id=query_id, batch_id=batch_id, start=checkpoint.start_offsets(batch_id),
                              end=end, committed=committed, group_id=spec.group_id)
        if action is BatchAction.SKIP_REPLAY:
            return BatchStats(batch_id, "skip_replay")

        clock = Stopwatch()
        table = collect_output(batch)
        require_dlq_topic(spec, dead_letters(table))
        stats = BatchStats(batch_id, "produce", collect_ms=clock.lap())
        with writer.transaction(batch_id) as producer:
            faults.hit(FaultPoint.BEFORE_PRODUCE)
            stats.rows_out, stats.rows_dlq = produce_rows(producer, spec, table)
            producer.flush(writer.timeout_s)
            stats.produce_ms = clock.lap()
            faults.hit(FaultPoint.AFTER_PRODUCE)
            faults.hit(FaultPoint.SLOW_TRANSACTION)
            writer.send_offsets(producer, offsets_to_commit(query_id, batch_id, end), clients.group_metadata())
            writer.commit(producer, batch_id)
            stats.commit_ms = clock.lap()
        faults.hit(FaultPoint.AFTER_KAFKA_COMMIT)
        return stats


def collect_output(batch: DataFrame) -> pa.Table:
    """The transform's output as one Arrow table (no per-row Py4J round trips)."""
    return output_frame(batch).toArrow()
