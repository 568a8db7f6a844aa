"""Read a micro-batch's executed plan and its Kafka scan's input ranges from Spark, inside ``foreachBatch``.

The one place the executor writers look into Spark's plans (docs/architecture.md, executor
writers). The reading is one call into the ``jvm/`` module's ``BatchPlanReader``
(``io.github.airflowprovidereos.plan``), which walks Spark's JVM objects where they live and
returns the facts as one JSON object; this module turns them into plain values
(:class:`~airflow_provider_eos.core.plan_alignment.BatchPlan`) that
:mod:`airflow_provider_eos.core.plan_alignment` judges, and raises :class:`PlanReadError` with
what the reader found when the plan is not the batch's. Written against Spark 4.2:

- ``ForeachBatchSink.addBatch`` does not hand the batch's own Dataset to the batch function: it
  wraps ``data.queryExecution.toRdd`` in a ``LogicalRDD``, so the DataFrame's executed plan is
  only ``Scan ExistingRDD`` (``RDDScanExec``) over that already built RDD. The query's plan for
  the batch is the stream's ``lastExecution`` (``IncrementalExecution``), found through the
  query id Spark sets as the local property ``sql.streaming.queryId`` on the thread that runs
  the batch (py4j runs the Python callback's JVM calls on that same thread).
- The input ranges come from the ``DataSourceRDD`` in the lineage of the very RDD the
  ``foreachBatch`` DataFrame scans. That RDD was built by ``toRdd`` before the batch function was
  called, and a ``DataSourceRDD`` holds its input partitions (for Kafka, each a
  ``KafkaBatchInputPartition`` with its ``offsetRange``) as a constructor value, so reading them
  plans nothing and is exactly what the tasks run. ``KafkaOffsetRangeCalculator`` drops empty
  ranges, so a Kafka partition without new input has no Spark partition.
- The options that split a Kafka partition over several Spark partitions live in the stream's
  ``kafkaOffsetReader.rangeCalculator`` (``minPartitions``, ``maxRecordsPerPartition``).
- A stateless micro-batch with a shuffle runs adaptively: the root is ``AdaptiveSparkPlanExec``
  with no ``children``; its current plan is ``executedPlan``, a query stage's exchange is
  ``plan``, a reused exchange's original is ``child``. The reader gives those as children.

That the execution is the batch's is checked without side effects: the same batch id (by the
reader), and the scan's end offsets equal the ends of the ranges (here).

One py4j call per batch (docs/design-notes.md note 51): the walk in Python took about 117 round
trips per batch (148-197 in the first), 7-25 ms before the batch's tasks could start.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.checkpoint.formats import parse_kafka_offsets
from airflow_provider_eos.core.errors import CheckpointError, PlanReadError
from airflow_provider_eos.core.plan_alignment import SPLITTING_OPTIONS, BatchPlan, InputRange
from airflow_provider_eos.core.plan_alignment import PlanNode as PlainNode
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.devstack.jars import EXECUTOR_WRITER_FIX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["QUERY_ID_PROPERTY", "READER_CLASS", "PlanReader", "read_batch_plan"]

#: The local property ``StreamExecution`` sets to the query id on the thread that runs a batch.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
#: The ``jvm/`` module's plan reader.
READER_CLASS = "io.github.airflowprovidereos.plan.BatchPlanReader"
_UNREADABLE_FIX = "use `writers: driver` (it does not read the plan); the plan reader supports Spark 4.2"


class PlanReader:
    """The driver's handle on the JVM plan reader, looked up once (py4j resolves a class name by round trips).

    :param session: the SparkSession that started the query (the batch's own session is a clone
        without the query).
    :raises PlanReadError: if the reader is not on the driver's classpath, naming the fix.
    """

    def __init__(self, session: SparkSession) -> None:
        from py4j.java_gateway import JavaClass

        self.session = session
        found = session.sparkContext._jvm.io.github.airflowprovidereos.plan.BatchPlanReader
        if not isinstance(found, JavaClass):  # py4j gives an unknown class as a JavaPackage
            raise PlanReadError(f"the plan reader ({READER_CLASS}) is not on the Spark driver's classpath",
                                fix=f"{EXECUTOR_WRITER_FIX}; or {_UNREADABLE_FIX}")
        self._reader = found

    def read(self, batch: DataFrame, batch_id: int) -> BatchPlan:
        """The executed plan of micro-batch ``batch_id`` and its Kafka scan's input ranges.

        Call it inside ``foreachBatch`` with the DataFrame Spark passed in.

        :param batch: the ``foreachBatch`` DataFrame.
        :param batch_id: the batch id passed with it.
        :returns: the plan as plain nodes, and the ranges in Spark partition order; the ranges are
            empty when the batch reads other than exactly one Kafka scan (no new input in a no-data
            batch, two scans, another source); such a plan is not aligned, and
            :func:`~airflow_provider_eos.core.plan_alignment.decide_alignment` names why.
        :raises PlanReadError: if the batch's plan cannot be found or is not the batch's.
        """
        facts = json.loads(self._reader.read(batch._jdf, batch_id, self.session._jsparkSession,
                                             ",".join(SPLITTING_OPTIONS)))
        if "error" in facts:
            raise _read_error(facts["error"], batch_id)
        ranges = tuple(InputRange(**r) for r in facts["ranges"])
        if facts["scan_end"] is not None and ranges:
            _check_same_batch(facts["scan_end"], ranges, batch_id)
        return BatchPlan(batch_id=batch_id, plan=PlainNode.model_validate(facts["plan"]), input_ranges=ranges)


def read_batch_plan(batch: DataFrame, batch_id: int, session: SparkSession) -> BatchPlan:
    """:meth:`PlanReader.read` with a reader of its own (a sink keeps one :class:`PlanReader` per query)."""
    return PlanReader(session).read(batch, batch_id)


def _read_error(error: dict[str, Any], batch_id: int) -> PlanReadError:
    kind = error["kind"]
    if kind == "not_foreach_batch":
        return PlanReadError(
            f"the DataFrame is not a foreachBatch micro-batch: its plan has {error['rdd_scans']} scans of an existing "
            f"RDD where Spark's foreachBatch gives exactly one:\n{PlainNode.model_validate(error['plan']).render()}",
            fix="call read_batch_plan with the DataFrame that foreachBatch passed in; otherwise " + _UNREADABLE_FIX,
        )
    if kind == "no_query_id":
        return PlanReadError(
            f"batch {batch_id}: no streaming query id on this thread (local property {QUERY_ID_PROPERTY})",
            fix="call read_batch_plan inside the foreachBatch function, on the thread Spark calls it on",
        )
    if kind == "no_query":
        return PlanReadError(
            f"batch {batch_id}: query {error['query_id']} is not among the active queries of the session passed in",
            fix="pass the SparkSession that started the streaming query (not the DataFrame's own session)",
        )
    found = error.get("found_batch_id")
    held = "no execution" if found is None else f"the execution of batch {found}"
    return PlanReadError(f"batch {batch_id}: query {error.get('query_id')} holds {held}", fix=_UNREADABLE_FIX)


def _check_same_batch(scan_end: str, ranges: tuple[InputRange, ...], batch_id: int) -> None:
    # The scan's end offsets are a constructor value (no planning). Each partition's last range
    # ends there (a source option may split a partition into several ranges).
    try:
        end = parse_kafka_offsets("the scan's end offsets", scan_end, "the batch's Kafka scan")
    except CheckpointError as err:
        raise PlanReadError(f"batch {batch_id}: {err.message}", fix=_UNREADABLE_FIX) from err
    last: dict[TopicPartition, InputRange] = {}
    for r in ranges:
        tp = TopicPartition(r.topic, r.partition)
        if tp not in last or r.until_offset > last[tp].until_offset:
            last[tp] = r
    wrong = [r.describe() for tp, r in last.items() if end.get(tp) != r.until_offset]
    if wrong:
        raise PlanReadError(
            f"batch {batch_id}: the query's plan for this batch ends at "
            f"{', '.join(f'{tp}@{offset}' for tp, offset in end.items())}, but the DataFrame's scan reads "
            f"{', '.join(wrong)}: the plan read is not the one that built this DataFrame",
            fix=_UNREADABLE_FIX,
        )
