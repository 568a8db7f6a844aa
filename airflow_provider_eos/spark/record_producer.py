"""What both exactly-once writers share: the output's columns, producing its rows, and naming failures.

The driver writer (:mod:`.driver_writer`) and the executor writers (:mod:`.partition_writer`)
produce the same records with the same headers; only where and in how many transactions differ.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException, Producer

from airflow_provider_eos.core.errors import RetryExhaustedError, SinkError
from airflow_provider_eos.core.output_columns import DLQ_REASON_COLUMN, ORIGIN_COLUMNS, null_header_error
from airflow_provider_eos.core.sink_failures import KafkaFailure
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.retriable import LOCAL_QUEUE_FULL, kafka_error

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

__all__ = ["DLQ_REASON_COLUMN", "BatchStats", "OutputColumns", "Stopwatch", "kafka_failure", "output_frame",
           "produce_rows", "require_dlq_topic"]

#: The transform's column that, when not null, sends the row to the dead-letter topic with this reason.


@dataclass
class BatchStats:
    """What the sink did in one batch; logged as one ``EOS-BATCH`` JSON line."""

    batch_id: int
    action: str
    rows_out: int = 0
    rows_dlq: int = 0
    collect_ms: int = 0
    produce_ms: int = 0
    commit_ms: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: The executor writers' tasks' ``EOS-TASK`` reports (each logged on its own line; the metrics sum them).
    task_reports: list[dict[str, Any]] = field(default_factory=list)

    def log_fields(self) -> dict[str, Any]:
        """The ``EOS-BATCH`` line's fields: everything but the task reports, which have lines of their own."""
        fields = asdict(self)
        del fields["task_reports"]
        return fields


class Stopwatch:
    """Milliseconds between laps, for the batch's stats."""

    def __init__(self) -> None:
        self._last = time.monotonic()

    def lap(self) -> int:
        now = time.monotonic()
        elapsed, self._last = now - self._last, now
        return int(elapsed * 1000)

    def peek(self) -> int:
        """Milliseconds since the last lap, without starting a new one."""
        return int((time.monotonic() - self._last) * 1000)


def output_frame(batch: DataFrame) -> DataFrame:
    """The transform's output as the writers that read it through Arrow take it: key/value as binary, the
    optional columns kept (:mod:`airflow_provider_eos.core.output_columns`).

    key/value are cast to binary: a transform may return strings, Kafka wants bytes. A record
    without headers travels with an empty headers array, never a null one: these writers (the
    Python workers' executor writers, the driver writer's spill) hand the columns to Spark's Arrow
    writer, which (Spark 4) asks the Arrow batch's size after every row, and a list column's size
    refills the offsets of all null rows since its last non-null one, so a column of nulls (Spark's
    Kafka source for records without headers) costs O(n²) per Arrow batch: 10.5 against 0.8 µs per
    row at 10,000 rows (``python -m bench.arrow_columns``). The JVM executor writer takes the transform's rows as they
    are (no selection at all): a null there costs one check.
    """
    return batch.select(*_output_columns(batch.schema))


class OutputColumns:
    """:func:`output_frame` for the batches of one query: its columns built at the first batch, then reused.

    PySpark builds each column through several py4j calls (it records the Python line that made it,
    for Spark's error messages): about 20 ms per batch on a busy driver, before any task starts
    (docs/design-notes.md note 47). A query's batches share one schema; a batch of another gets
    columns of its own.
    """

    def __init__(self) -> None:
        self._schema: StructType | None = None
        self._columns: list[Column] = []

    def frame(self, batch: DataFrame) -> DataFrame:
        """``batch`` as :func:`output_frame` selects it."""
        schema = batch.schema
        if schema != self._schema:
            self._schema, self._columns = schema, _output_columns(schema)
        return batch.select(*self._columns)


def _output_columns(schema: StructType) -> list[Column]:
    from pyspark.sql import functions as F

    names = schema.names
    wanted = [F.col("key").cast("binary").alias("key"), F.col("value").cast("binary").alias("value")]
    if "headers" in names:
        none = F.array().cast(schema["headers"].dataType)
        wanted.append(F.coalesce(F.col("headers"), none).alias("headers"))
    wanted.extend(F.col(optional) for optional in (DLQ_REASON_COLUMN, *ORIGIN_COLUMNS) if optional in names)
    return wanted


def dead_letters(table: pa.Table | pa.RecordBatch) -> int:
    """How many rows of ``table`` the transform sent to the dead-letter topic."""
    if DLQ_REASON_COLUMN not in table.schema.names:
        return 0
    return table.num_rows - table.column(DLQ_REASON_COLUMN).null_count


def require_dlq_topic(spec: PipelineSpec, dead: int) -> None:
    """Refuse dead letters when the spec has nowhere to put them; checked before a transaction opens."""
    if dead and not spec.dlq_topic:
        raise SinkError(
            f"the transform returned {dead} dead-letter row(s) but the spec {spec.name!r} has no dlq_topic",
            fix="set dlq_topic in the spec (or make the transform drop or repair those rows)",
        )


def _headers_by_row(rows: pa.Table | pa.RecordBatch, transform: str) -> dict[int, list[tuple[str, bytes | None]]]:
    """The headers of the rows that carry any, by row (vectorised: the common batch has none, and only
    the rows that do are converted to Python).

    :raises SinkError: a null header or a header whose key is null (:func:`null_header_error`): the
        column's type allows both, Kafka's headers do not.
    """
    import pyarrow.compute as pc

    if "headers" not in rows.schema.names:
        return {}
    column = rows.column(rows.schema.names.index("headers"))
    carrying = pc.indices_nonzero(pc.fill_null(pc.greater(pc.list_value_length(column), 0), False))
    by_row = {}
    for i, row in zip(carrying.to_pylist(), pc.take(column, carrying).to_pylist(), strict=True):
        if any(h is None or h["key"] is None for h in row):
            raise null_header_error(transform, None, "header" if None in row else "key")
        by_row[i] = [(h["key"], h["value"]) for h in row]
    return by_row


def produce_rows(producer: Producer, spec: PipelineSpec, rows: pa.Table | pa.RecordBatch) -> tuple[int, int]:
    """Hand every row (output or dead letter) to the producer; returns the two counts.

    Does not wait for delivery: the caller flushes once, before it sends the offsets. The loop is
    the writers' per-record cost: rows without headers and dead letters (the common case) take a
    loop of bare positional ``produce`` calls; otherwise only the rows that carry headers have them
    converted (the others are still positional calls), and the source columns are read only for dead
    letters. The delivery reports of what is produced so far are served at the end (the caller hands
    Arrow batches one by one), so the local queue keeps room.
    """
    names = rows.schema.names
    keys = rows.column(names.index("key")).to_pylist()
    values = rows.column(names.index("value")).to_pylist()
    headers = _headers_by_row(rows, spec.transform or "identity")
    if not headers and not dead_letters(rows):
        _produce_plain(producer, spec, keys, values)
        producer.poll(0)
        return len(values), 0
    reasons = rows.column(names.index(DLQ_REASON_COLUMN)).to_pylist() if DLQ_REASON_COLUMN in names else None
    origin: list[tuple[str, list]] | None = None
    output_topic, produce = spec.output_topic, producer.produce
    dead = 0
    for i, value in enumerate(values):
        record_headers = headers.get(i)
        topic = output_topic
        if reasons is not None and reasons[i] is not None:
            dead += 1
            topic = spec.dlq_topic
            if origin is None:
                origin = [(c, rows.column(names.index(c)).to_pylist()) for c in ORIGIN_COLUMNS if c in names]
            record_headers = [*(record_headers or []), ("eos.dlq.reason", str(reasons[i]).encode()),
                              *((f"eos.source.{c}", str(column[i]).encode()) for c, column in origin)]
        try:
            if record_headers is None:
                produce(topic, value, keys[i])
            else:
                produce(topic, value=value, key=keys[i], headers=record_headers)
        except BufferError:
            _produce_when_queue_has_room(producer, spec, topic, value, keys[i], record_headers)
    producer.poll(0)
    return len(values) - dead, dead


def _produce_plain(producer: Producer, spec: PipelineSpec, keys: list, values: list) -> None:
    # Positional arguments: keyword parsing is a measurable share of a call this cheap.
    topic, produce = spec.output_topic, producer.produce
    for key, value in zip(keys, values, strict=True):
        try:
            produce(topic, value, key)
        except BufferError:
            _produce_when_queue_has_room(producer, spec, topic, value, key, None)


def _produce_when_queue_has_room(producer: Producer, spec: PipelineSpec, topic: str, value: bytes | None,
                                 key: bytes | None, headers: list | None) -> None:
    # The local queue is full: serve delivery reports until it has room, within the transaction's time.
    send = partial(producer.produce, topic, value=value, key=key, headers=headers)
    LOCAL_QUEUE_FULL.bounded(timeout_s=spec.transaction_timeout_ms / 1000).call(
        send, what=f"produce to {topic!r}", sleep=producer.poll)


def kafka_failure(exc: KafkaException | RetryExhaustedError, *, outlived_timeout: bool) -> KafkaFailure:
    """The classification's view of a client error (a retry policy's error: of its last attempt)."""
    exhausted = isinstance(exc, RetryExhaustedError)
    error = kafka_error(exc.last_error if isinstance(exc, RetryExhaustedError) else exc)
    if error is None:  # only the local queue's BufferError carries no KafkaError
        return KafkaFailure("_QUEUE_FULL", retriable=True, detail=str(exc), outlived_timeout=outlived_timeout)
    return KafkaFailure(
        error.name(),
        fatal=error.fatal(),
        retriable=error.retriable(),
        txn_requires_abort=error.txn_requires_abort(),
        detail=exc.message if exhausted else error.str(),
        outlived_timeout=outlived_timeout,
    )
