"""The driver writer's output spill: the batch's output goes from the tasks to the driver through files.

docs/architecture.md (driver writer) asks that the driver writer's memory not grow with the batch. Streaming the output
through Spark to the driver does not get there: ``toArrow()`` collects it, and
``toLocalIterator`` makes the driver JVM hold a whole partition's result plus the prefetched one
(measured: driver JVM 686 -> 1,435 MB for 100k -> 1M records; ``docs/design-notes.md`` item 12).
So each task writes its partition's output (the Arrow record batches Spark's Arrow writer makes,
``spark.sql.execution.arrow.maxRecordsPerBatch`` rows each) as one Arrow IPC stream file under
the checkpoint, and returns one small report: the file, its rows, its dead letters. What runs the
tasks is the spec's ``executor_writer`` (:func:`~.driver_writer.spill_tasks`): with ``jvm`` (the default) the
``jvm/`` module's spill data source in the executor JVM, through Hadoop's filesystem of the
checkpoint with the driver's Hadoop configuration (:mod:`.jvm_spill`, ``docs/design-notes.md``
item 43); with ``python`` PySpark's Python workers (``mapInArrow``, :class:`SpillTask`), through
fsspec on the checkpoint's filesystem opened as the driver opens it (an ``hdfs://`` one through the
driver's WebHDFS address and user, which the task is handed, since executors have no Hadoop
configuration of their own: docs/design-notes.md item 39). Either way every deployment already
shares the checkpoint between driver and executors. Only after the Spark job has finished does the
driver open the transaction and read the files one record batch at a time, through fsspec: its
memory is one Arrow batch whatever the batch size, and the driver JVM sees only the small reports.

Layout: ``<checkpoint>/eos/spill/<batch>/<write>/<spark partition>-<task attempt id>.arrow``,
``<write>`` unique per driver attempt at the batch, so a zombie driver's tasks (task attempt ids
restart with every SparkContext) never write the live driver's file. Only the files named by the
job's results are read: Spark returns exactly one successful attempt per partition, so the file
of a failed, killed or losing speculative attempt is never read, only removed with its folder
(after the batch, or at the start of the next one when the driver died).

Each task logs an ``EOS-SPILL`` line and announces :attr:`~.sink_points.TaskPoint.TASK_AFTER_SPILL`
once its file is complete and before it reports: where the crash tests kill an attempt, so a whole
file of a killed attempt lies next to the retry's.
"""

from __future__ import annotations

import json
import logging
import posixpath
import sys
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.checkpoint.location import SPILL_FOLDER
from airflow_provider_eos.core.errors import SinkError
from airflow_provider_eos.spark.record_producer import OutputColumns, dead_letters
from airflow_provider_eos.spark.sink_points import TaskObserver, TaskPoint

if TYPE_CHECKING:
    import pyarrow as pa
    from fsspec import AbstractFileSystem
    from pyspark.sql import DataFrame

__all__ = ["SPILL_FOLDER", "OutputSpill", "PythonSpillTasks", "SpillTask", "SpillTasks", "SpilledPart",
           "read_spill_file", "spill_summary", "write_spill_file"]

log = logging.getLogger("airflow_provider_eos.sink")


#: What each task returns: one row per Spark partition.
_RESULT_SCHEMA = "spark_partition int, attempt int, file string, rows long, dead long, bytes long"


def _result_arrow_schema() -> pa.Schema:
    """:data:`_RESULT_SCHEMA` in Arrow types (Spark checks them exactly: ``int`` is int32)."""
    import pyarrow as pa

    return pa.schema([("spark_partition", pa.int32()), ("attempt", pa.int32()), ("file", pa.string()),
                      ("rows", pa.int64()), ("dead", pa.int64()), ("bytes", pa.int64())])


@dataclass(frozen=True)
class SpilledPart:
    """One Spark partition's output as its successful task attempt left it.

    :param spark_partition: the partition index (the order the driver produces in).
    :param attempt: the attempt number (0 unless a retry or a speculative copy won).
    :param file: the file's path as the checkpoint's filesystem spells it; ``None`` when the
        partition had no output rows.
    :param rows: rows in the file, dead letters included.
    :param dead: dead letters among them.
    :param bytes: the file's size.
    """

    spark_partition: int
    attempt: int
    file: str | None
    rows: int
    dead: int
    bytes: int


def write_spill_file(fs: AbstractFileSystem, path: str, batches: Iterable[pa.RecordBatch]) -> tuple[int, int, int]:
    """Write ``batches`` as one Arrow IPC stream to ``path``; returns (rows, dead letters, bytes).

    Nothing is created when there is no batch: an empty partition has no file.
    """
    import pyarrow as pa

    rows = dead = size = 0
    out: BinaryIO | None = None
    writer: pa.ipc.RecordBatchStreamWriter | None = None
    try:
        for batch in batches:
            if writer is None:
                fs.makedirs(posixpath.dirname(path), exist_ok=True)
                out = fs.open(path, "wb")
                writer = pa.ipc.new_stream(out, batch.schema)
            writer.write_batch(batch)
            rows += batch.num_rows
            dead += dead_letters(batch)
        if writer is not None:
            writer.close()
            size = out.tell()
    finally:
        if out is not None:
            out.close()
    return rows, dead, size


def read_spill_file(fs: AbstractFileSystem, part: SpilledPart) -> Iterator[pa.RecordBatch]:
    """The record batches of one part's file, one at a time, checked against the rows its task reported.

    :raises SinkError: the file holds other than the reported rows (it was changed after the task).
    """
    import pyarrow as pa

    if part.file is None:
        return
    found = 0
    with fs.open(part.file, "rb") as source, pa.ipc.open_stream(source) as reader:
        for batch in reader:
            found += batch.num_rows
            yield batch
    if found != part.rows:
        raise SinkError(
            f"spill file {part.file} holds {found} rows, its task reported {part.rows}",
            fix="something else writes to the checkpoint's eos/spill folder (a second job on this checkpoint?); "
            "the batch is replayed on restart",
        )


@dataclass(frozen=True)
class SpillTask:
    """What the driver ships to every task (``mapInArrow``): write the partition's output to its file.

    :param location: the checkpoint location (the task opens the same filesystem).
    :param folder: the write's folder, relative to the checkpoint root.
    :param batch_id: the micro-batch id (for the announced point and the log line).
    :param points: what the task announces its point to (:mod:`.sink_points`).
    :param storage_options: how the driver's reader opened it (:attr:`CheckpointReader.storage_options`:
        for ``hdfs://`` the WebHDFS address and user); they travel in the task's closure.
    """

    location: str
    folder: tuple[str, ...]
    batch_id: int
    points: TaskObserver
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)  # may hold a token or password

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        from pyspark import TaskContext

        context = TaskContext.get()
        partition, attempt = context.partitionId(), context.attemptNumber()
        # Options alone, no Hadoop configuration: the executor's container has none (YARN).
        checkpoint = CheckpointReader(self.location, self.storage_options, hadoop_conf={})
        path = checkpoint.path(*self.folder, f"{partition}-{context.taskAttemptId()}.arrow")
        rows, dead, size = write_spill_file(checkpoint.fs, path, batches)
        part = SpilledPart(partition, attempt, path if rows else None, rows, dead, size)
        # One line per task (Python workers' stderr reaches the job's log), as EOS-TASK of the executor writers.
        sys.stderr.write(f"EOS-SPILL {json.dumps({'batch_id': self.batch_id, **asdict(part)}, sort_keys=True)}\n")
        sys.stderr.flush()
        self.points.reached(TaskPoint.TASK_AFTER_SPILL, self.batch_id, partition)
        yield pa.RecordBatch.from_pylist([asdict(part)], schema=_result_arrow_schema())


class SpillTasks(Protocol):
    """Runs the spill's Spark job: every task writes its partition's file under ``folder``; returns the parts."""

    def run(self, output: DataFrame, checkpoint: CheckpointReader, folder: tuple[str, ...], batch_id: int,
            points: TaskObserver) -> list[SpilledPart]: ...


class PythonSpillTasks:
    """The tasks in PySpark's Python workers (``mapInArrow``): ``executor_writer: python``."""

    def run(self, output: DataFrame, checkpoint: CheckpointReader, folder: tuple[str, ...], batch_id: int,
            points: TaskObserver) -> list[SpilledPart]:
        task = SpillTask(checkpoint.location, folder, batch_id, points, checkpoint.storage_options)
        return [SpilledPart(**row.asDict()) for row in output.mapInArrow(task, _RESULT_SCHEMA).collect()]


class OutputSpill:
    """The spill folder of one checkpoint: write a batch's output there, read it back, remove it.

    :param checkpoint: the checkpoint reader (its filesystem and root address the spill).
    :param tasks: what runs the tasks that write the files (:func:`~.driver_writer.spill_tasks`); by default
        PySpark's Python workers.
    """

    def __init__(self, checkpoint: CheckpointReader, tasks: SpillTasks | None = None) -> None:
        self.checkpoint = checkpoint
        self.tasks = tasks or PythonSpillTasks()
        self._output = OutputColumns()

    @property
    def root(self) -> str:
        return self.checkpoint.path(*SPILL_FOLDER)

    def batch_folder(self, batch_id: int) -> str:
        return self.checkpoint.path(*SPILL_FOLDER, str(batch_id))

    def write(self, batch: DataFrame, batch_id: int, points: TaskObserver) -> list[SpilledPart]:
        """Run the batch's Spark job: every task writes its partition's file; returns them in partition order."""
        folder = (*SPILL_FOLDER, str(batch_id), uuid.uuid4().hex[:12])
        parts = self.tasks.run(self._output.frame(batch), self.checkpoint, folder, batch_id, points)
        return sorted(parts, key=lambda p: p.spark_partition)

    def read(self, parts: Iterable[SpilledPart]) -> Iterator[pa.RecordBatch]:
        """Every part's record batches in partition order, one batch in memory at a time."""
        for part in parts:
            yield from read_spill_file(self.checkpoint.fs, part)

    def clear(self) -> None:
        """Remove every spill folder: what a driver that died mid-batch, or a losing attempt, left."""
        self._remove(self.root)

    def remove(self, batch_id: int) -> None:
        """Remove the batch's folder, the files of failed and speculative attempts included."""
        self._remove(self.batch_folder(batch_id))

    def _remove(self, path: str) -> None:
        fs = self.checkpoint.fs
        fs.invalidate_cache(path)
        # Best effort: a leftover is removed at the next batch's start, and must not hide the batch's own error.
        try:
            if fs.exists(path):
                fs.rm(path, recursive=True)
        except OSError as err:
            log.warning("could not remove the spill folder %s: %s", self.checkpoint.display(path), err)


def spill_summary(parts: Iterable[SpilledPart]) -> dict[str, Any]:
    """The parts as the batch's ``EOS-BATCH`` line reports them (retried partitions by attempt)."""
    parts = list(parts)
    return {
        "writers": "driver",
        "spill_files": sum(1 for p in parts if p.file),
        "spill_bytes": sum(p.bytes for p in parts),
        "spill_retried": {str(p.spark_partition): p.attempt for p in parts if p.attempt},
    }
