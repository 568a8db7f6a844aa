"""The executor writers' tasks in the executor JVM (``executor_writer: jvm``; docs/design-notes.md note 32).

The hot path (reading the rows, producing them, the transaction) runs in the ``jvm/`` module's
Spark data source, one transactional Kafka Java producer per input partition cached per executor
JVM. Everything that decides stays here, in Python: this module computes per input partition,
with :func:`~airflow_provider_eos.core.sink_protocol.partition_expectation` and
:func:`~airflow_provider_eos.core.sink_protocol.offsets_to_commit`, the exact committed states
the task compares with what it reads, the offset and marker it commits and its transactional id
(``spec.partition_transactional_id``), and passes them in the write's ``eos.plan`` option. A task
that finds neither state fails with what it found; :mod:`.jvm_task_errors` turns that (and every
other task failure the JVM names) into the typed error the Python writer raises.

The client settings hold secrets (SASL password, TLS keys): they go to the driver JVM once, by a
py4j call, under a random handle; the options carry the handle only, and the data source puts the
settings into the tasks' serialized writer factory (the task closure), never into options, which
Spark's plans, UI and event log can show.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.errors import SinkError
from airflow_provider_eos.core.markers import CommittedOffset
from airflow_provider_eos.core.sink_protocol import offsets_to_commit, partition_expectation
from airflow_provider_eos.core.transactions.stable_read import stable_read_timeout_ms
from airflow_provider_eos.kafka.group_offsets import stored_metadata
from airflow_provider_eos.kafka.settings import java_admin_config, java_sink_producer_config
from airflow_provider_eos.spark.jvm_task_errors import typed_task_error
from airflow_provider_eos.spark.writer_jar import WriterJar, observer_entry

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.spark.executor_writers import BatchTasks

__all__ = ["DATA_SOURCE", "JvmTasks", "write_plan"]

log = logging.getLogger("airflow_provider_eos.sink")

#: The ``jvm/`` module's data source (its class name: no service-loader lookup to go wrong).
DATA_SOURCE = "io.github.airflowprovidereos.writer.ExecutorWriterSource"
_PLAN_OPTION = "eos.plan"

def _committed(value: CommittedOffset | None) -> dict[str, Any] | None:
    # The Java client compares and commits exact bytes: the form the broker holds for what this package commits.
    return None if value is None else {"offset": value.offset, "metadata": stored_metadata(value.metadata)}


def write_plan(tasks: BatchTasks, *, config_handle: str, report_key: str) -> dict[str, Any]:
    """The ``eos.plan`` option: per Spark partition, what its task compares, commits and calls itself.

    :param config_handle: the handle the client settings are registered under in the driver JVM.
    :param report_key: where the driver JVM keeps this write's task stats.
    """
    spec = tasks.spec
    partitions = []
    for r in tasks.mapping.ranges:
        tp = r.tp
        expected = partition_expectation(tp, query_id=tasks.query_id, batch_id=tasks.batch_id, start=tasks.start,
                                         end=tasks.end, expiry=tasks.expiry)
        ((offset, marker),) = offsets_to_commit(tasks.query_id, tasks.batch_id, {tp: tasks.end[tp]}).values()
        partitions.append({
            "spark_partition": r.spark_partition, "topic": tp.topic, "partition": tp.partition,
            "transactional_id": spec.partition_transactional_id(tp.topic, tp.partition),
            "commit": _committed(CommittedOffset(offset, marker)),
            "skip_when": _committed(expected.skip_at),
            "produce_when": _committed(expected.produce_at),
            "produce_when_nothing_committed": expected.produce_when_nothing_committed,
            "describe": r.describe(),
        })
    return {
        "report_key": report_key, "config_handle": config_handle, "query_id": tasks.query_id,
        "batch_id": tasks.batch_id, "group_id": spec.group_id, "output_topic": spec.output_topic,
        "dlq_topic": spec.dlq_topic, "transaction_timeout_ms": spec.transaction_timeout_ms,
        "stable_read_timeout_ms": stable_read_timeout_ms(spec.transaction_timeout_ms),
        "partitions": partitions, "observer": observer_entry(tasks.points.jvm_plan()),
    }


class JvmTasks:
    """Runs a batch's write tasks with the ``jvm/`` data source and collects their ``EOS-TASK`` lines.

    :param spec: the pipeline spec (its Kafka settings in the Java client's dialect go to the driver JVM).
    """

    def __init__(self, spec: PipelineSpec, jar: WriterJar | None = None) -> None:
        self.spec = spec
        self.jar = jar or WriterJar()
        self._registry: Any = None
        self._handle = uuid.uuid4().hex
        #: The transactional ids this sink's writes used: its close closes only their producers.
        self._transactional_ids: set[str] = set()

    def _driver_registry(self, frame: DataFrame) -> Any:
        if self._registry is None:
            registry = self.jar.registry(frame.sparkSession)
            registry.putConfig(self._handle, json.dumps(java_sink_producer_config(self.spec)),
                               json.dumps(java_admin_config(self.spec)))
            self._registry = registry
        return self._registry

    def run(self, batch: DataFrame, tasks: BatchTasks, reports: list[str]) -> None:
        """Write the batch: one task per input partition, each committing its own transaction.

        The batch goes to the data source as the transform returned it: the tasks read ``key``,
        ``value`` (string or binary), ``headers`` and the dead-letter and source columns by name
        and check their types on the driver before any task starts, so no projection is planned
        per batch (docs/design-notes.md note 50). A failed write's finished tasks' stats (the
        data source's ``abort`` keeps them) go to ``reports`` too.
        """
        if not tasks.mapping.ranges:
            # Spark would still run one (empty) task for a write of no partitions; the driver commits them all.
            return
        self._driver_registry(batch)
        report_key = f"{tasks.query_id}/{tasks.batch_id}/{uuid.uuid4().hex}"
        plan = write_plan(tasks, config_handle=self._handle, report_key=report_key)
        self._transactional_ids.update(p["transactional_id"] for p in plan["partitions"])
        finished: list[dict[str, Any]] = []
        try:
            found = self.jar.write(batch, DATA_SOURCE, {_PLAN_OPTION: json.dumps(plan)}, report_key,
                                   tasks.points.jvm_plan(), failed_reports=finished)
        except Exception as exc:
            reports += [json.dumps(report, sort_keys=True) for report in finished]
            typed = typed_task_error(exc, tasks)
            if typed is None:
                raise
            raise typed from exc
        if found is None:
            raise SinkError(f"batch {tasks.batch_id}: the JVM executor writer returned without the tasks' stats",
                            fix="the batch is not complete; Spark replays it on restart (committed partitions "
                            "skip). If this repeats, set `executor_writer: python` and report it")
        reports += [json.dumps(report, sort_keys=True) for report in found]

    def close(self) -> None:
        """Forget the settings in the driver JVM and close its producers of this sink's transactional ids.

        Local mode: the executors are there; another pipeline's producers, even with the same settings, stay.
        """
        registry, self._registry = self._registry, None
        if registry is None:
            return
        from py4j.protocol import Py4JError

        try:
            registry.forgetConfig(self._handle, json.dumps(sorted(self._transactional_ids)))
        except Py4JError as exc:  # the JVM is already gone: so are its producers
            log.debug("could not forget the JVM writer's settings: %s", exc)
