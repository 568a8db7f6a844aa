"""The driver writer's spill in the executor JVM (``executor_writer: jvm``; docs/design-notes.md note 43).

The ``jvm/`` module's ``eos-spill`` data source writes each partition's output as one Arrow IPC
stream file, through Spark's own Arrow writer and Hadoop's filesystem of the checkpoint, with the
driver's Hadoop configuration shipped to the tasks. The files, the layout and the reading are
:mod:`.output_spill`'s; what changes is that no task starts a Python worker, whose start (pyspark's
worker, pandas, this package) and Arrow round trip made the spill the driver writer's largest cost.

The tasks report through the driver JVM's registry (:mod:`.writer_jar`), and only reported files
are read: Spark's commit coordinator lets one attempt per partition report, so a failed or losing
attempt's file is never read, only removed with the batch's folder.
"""

from __future__ import annotations

import json
import posixpath
import uuid
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.errors import SinkError
from airflow_provider_eos.spark.output_spill import SpilledPart
from airflow_provider_eos.spark.writer_jar import WriterJar, observer_entry

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.spark.sink_points import TaskObserver

__all__ = ["SPILL_SOURCE", "JvmSpillTasks", "spark_folder"]

#: The ``jvm/`` module's spill data source (its class name: no service-loader lookup to go wrong).
SPILL_SOURCE = "io.github.airflowprovidereos.writer.SpillSource"
_SPILL_OPTION = "eos.spill"


def spark_folder(location: str, folder: tuple[str, ...]) -> str:
    """The write's folder as Spark addresses the checkpoint (its ``checkpointLocation`` string, any scheme)."""
    return posixpath.join(location.rstrip("/") or "/", *folder)


class JvmSpillTasks:
    """Runs the spill's Spark job with the ``jvm/`` data source; returns the reported parts.

    :param jar: the driver's side of the writer's jar (the executor writers' tasks use the same jar).
    """

    def __init__(self, jar: WriterJar | None = None) -> None:
        self.jar = jar or WriterJar()

    def run(self, output: DataFrame, checkpoint: CheckpointReader, folder: tuple[str, ...], batch_id: int,
            points: TaskObserver) -> list[SpilledPart]:
        """Every task writes its partition's file under ``folder``; returns the parts Spark's job reported."""
        observer = points.jvm_plan()
        report_key = f"spill/{batch_id}/{uuid.uuid4().hex}"
        plan = {"folder": spark_folder(checkpoint.location, folder), "batch_id": batch_id,
                "report_key": report_key, "observer": observer_entry(observer)}
        found = self.jar.write(output, SPILL_SOURCE, {_SPILL_OPTION: json.dumps(plan)}, report_key, observer)
        if found is None:
            raise SinkError(f"batch {batch_id}: the JVM spill returned without its tasks' reports",
                            fix="the batch is not complete; Spark replays it on restart. If this repeats, set "
                            "`executor_writer: python` and report it")
        return [_part(checkpoint, folder, report) for report in found]


def _part(checkpoint: CheckpointReader, folder: tuple[str, ...], report: dict[str, Any]) -> SpilledPart:
    # The task names its file as Hadoop qualified it; the driver reads it through fsspec, under the same folder.
    file = report["file"]
    return SpilledPart(spark_partition=report["spark_partition"], attempt=report["attempt"],
                       file=checkpoint.path(*folder, posixpath.basename(file)) if file else None,
                       rows=report["rows"], dead=report["dead"], bytes=report["bytes"])
