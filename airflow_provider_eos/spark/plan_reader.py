"""Read a micro-batch's executed plan and its Kafka scan's input ranges from Spark, inside ``foreachBatch``.

The one place that looks into Spark's JVM objects for the executor writers (docs/architecture.md, executor writers); it
returns plain values (:class:`~airflow_provider_eos.core.plan_alignment.BatchPlan`) that
:mod:`airflow_provider_eos.core.plan_alignment` judges. Written against Spark 4.2:

- ``ForeachBatchSink.addBatch`` does not hand the batch's own Dataset to the batch function: it
  wraps ``data.queryExecution.toRdd`` in a ``LogicalRDD``, so the DataFrame's executed plan is
  only ``Scan ExistingRDD`` (``RDDScanExec``) over that already built RDD. The query's plan for
  the batch is the stream's ``lastExecution`` (``IncrementalExecution``), found through the
  query id Spark sets as the local property ``sql.streaming.queryId`` on the thread that runs
  the batch (py4j runs the Python callback's JVM calls on that same thread).
- ``MicroBatchScanExec`` reads the batch: ``inputPartitions`` is a lazy val,
  ``stream.planInputPartitions(start, end)``; ``inputRDD`` is a ``DataSourceRDD`` over
  ``partitions`` (``inputPartitions`` each wrapped in an ``Option``), so Spark partition ``i``
  reads ``inputPartitions(i)``. For Kafka each is a ``KafkaBatchInputPartition`` whose
  ``offsetRange`` (``KafkaOffsetRange``) has ``topicPartition``, ``fromOffset`` and
  ``untilOffset``. ``KafkaOffsetRangeCalculator`` drops empty ranges, so a Kafka partition
  without new input has no Spark partition.
- The options that split a Kafka partition over several Spark partitions live in the stream's
  ``kafkaOffsetReader.rangeCalculator`` (``minPartitions``, ``maxRecordsPerPartition``).
- A stateless micro-batch with a shuffle runs adaptively: the root is ``AdaptiveSparkPlanExec``
  with no ``children``; its current plan is ``executedPlan``, a query stage's exchange is
  ``plan``, a reused exchange's original is ``child``. The reader gives those as children.

How the ranges are the batch's own, planned once: :func:`read_batch_plan` takes them from the
``DataSourceRDD`` found in the lineage of the very RDD the ``foreachBatch`` DataFrame scans.
That RDD was built by ``toRdd`` before the batch function was called, and a ``DataSourceRDD``
holds its input partitions as a constructor value, so reading ``partitions()`` only zips that
held sequence with its indexes: no call reaches ``planInputPartitions`` or the Kafka offset
reader. It is also exactly what tasks run: anything an executor writer does with the DataFrame
(``rdd``, ``mapInArrow``, ``foreachPartition``) plans on top of that same RDD, however often it
re-plans. The plan tree is read from ``lastExecution.executedPlan`` (forced by Spark before the
batch runs) through constructor fields, ``simpleString`` and the adaptive root's current plan
only; never through ``inputPartitions``, ``inputRDD`` or ``toRdd``, which on an execution other
than the one that built the RDD would plan the scan a second time. That the execution is the
batch's is checked without side effects: the same batch id, and the scan's end offsets equal
the ends of the ranges.

Every read is py4j round trips from the driver's Python, about 200 per batch, while the batch's
tasks wait to start. A :class:`PlanMemo` keeps the plan tree of the query run's last batch under
the text Spark prints for it (``treeString``, one call): a batch whose plan prints the same text
in the same run reuses the tree and walks only to its Kafka scan for the end-offsets check
(design note 49). The ranges are read from every batch's own RDD as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.checkpoint.formats import parse_kafka_offsets
from airflow_provider_eos.core.errors import CheckpointError, PlanReadError
from airflow_provider_eos.core.plan_alignment import KAFKA_SCAN, KAFKA_STREAM, SPLITTING_OPTIONS, BatchPlan, InputRange
from airflow_provider_eos.core.plan_alignment import PlanNode as PlainNode
from airflow_provider_eos.core.topic_partition import TopicPartition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["QUERY_ID_PROPERTY", "PlanMemo", "read_batch_plan"]

#: The local property ``StreamExecution`` sets to the query id on the thread that runs a batch.
QUERY_ID_PROPERTY = "sql.streaming.queryId"

_RDD_SCAN = "RDDScanExec"
_ADAPTIVE = "AdaptiveSparkPlanExec"
_QUERY_STAGE = "QueryStageExec"
_REUSED_EXCHANGE = "ReusedExchangeExec"
_DATA_SOURCE_RDD = "org.apache.spark.sql.execution.datasources.v2.DataSourceRDD"
_KAFKA_INPUT_PARTITION = "KafkaBatchInputPartition"
_DESCRIPTION_LIMIT = 300
#: ``maxFields`` of a node's description (``simpleString``) and of the tree text that keys a :class:`PlanMemo`.
_MAX_FIELDS = 25
_UNREADABLE_FIX = "use `writers: driver` (it does not read the plan); the plan reader supports Spark 4.2"


def _seq(scala_seq: Any) -> Iterator[Any]:
    iterator = scala_seq.iterator()
    while iterator.hasNext():
        yield iterator.next()


def _class_name(obj: Any) -> str:
    return str(obj.getClass().getSimpleName())


def _hidden_child(node: Any, name: str) -> Any | None:
    # Adaptive execution hides its plan from ``children``: the adaptive root holds the current
    # physical plan, a query stage the exchange it materialized, a reused exchange the original.
    if name == _ADAPTIVE:
        return node.executedPlan()
    if name.endswith(_QUERY_STAGE):
        return node.plan()
    if name == _REUSED_EXCHANGE:
        return node.child()
    return None


def _children(node: Any, name: str) -> list[Any]:
    """The children of ``node``, whose class name is ``name`` (read once per node: two round trips)."""
    hidden = _hidden_child(node, name)
    return [hidden] if hidden is not None else list(_seq(node.children()))


def _child_at(node: Any, name: str, index: int) -> Any:
    hidden = _hidden_child(node, name)
    return hidden if hidden is not None else node.children().apply(index)


def _named_nodes(node: Any) -> Iterator[tuple[str, Any]]:
    name = _class_name(node)
    yield name, node
    for child in _children(node, name):
        yield from _named_nodes(child)


def _option(scala_option: Any) -> Any | None:
    return scala_option.get() if scala_option.isDefined() else None


def _scan_details(scan: Any) -> dict[str, str]:
    stream = scan.stream()
    details = {"stream": _class_name(stream)}
    if details["stream"] == KAFKA_STREAM:
        calculator = stream.kafkaOffsetReader().rangeCalculator()
        for option in SPLITTING_OPTIONS:
            value = _option(getattr(calculator, option)())
            if value is not None:
                details[option] = str(value)
    return details


def _plain(node: Any, path: tuple[int, ...] = (), kafka_scans: list[tuple[tuple[int, ...], Any]] | None = None,
           ) -> PlainNode:
    """The plain tree under ``node``; each Kafka scan met is added to ``kafka_scans`` with its path of child indexes."""
    name = _class_name(node)
    description = str(node.simpleString(_MAX_FIELDS))
    if len(description) > _DESCRIPTION_LIMIT:
        description = description[: _DESCRIPTION_LIMIT - 3] + "..."
    if name == KAFKA_SCAN and kafka_scans is not None:
        kafka_scans.append((path, node))
    return PlainNode(
        name=name,
        description=description,
        details=_scan_details(node) if name == KAFKA_SCAN else {},
        children=tuple(_plain(child, (*path, index), kafka_scans)
                       for index, child in enumerate(_children(node, name))),
    )


def _scanned_rdd(batch: DataFrame) -> Any:
    own_plan = batch._jdf.queryExecution().executedPlan()
    scans = [node for name, node in _named_nodes(own_plan) if name == _RDD_SCAN]
    if len(scans) != 1:
        raise PlanReadError(
            f"the DataFrame is not a foreachBatch micro-batch: its plan has {len(scans)} scans of an existing "
            f"RDD where Spark's foreachBatch gives exactly one:\n{_plain(own_plan).render()}",
            fix="call read_batch_plan with the DataFrame that foreachBatch passed in; "
            "otherwise " + _UNREADABLE_FIX,
        )
    return scans[0].rdd()


def _data_source_rdds(rdd: Any) -> list[Any]:
    found, seen, pending = [], set(), [rdd]
    while pending:
        current = pending.pop()
        if current.id() in seen:
            continue
        seen.add(current.id())
        if str(current.getClass().getName()) == _DATA_SOURCE_RDD:
            found.append(current)
            continue
        pending.extend(dependency.rdd() for dependency in _seq(current.dependencies()))
    return found


def _input_ranges(data_source_rdd: Any) -> tuple[InputRange, ...]:
    """The Kafka ranges by Spark partition; empty for another source (the decision then names it)."""
    ranges = []
    for spark_partition in data_source_rdd.partitions():
        input_partition = _option(spark_partition.inputPartition())
        # One scan planned them all, so one class: the first partition's tells.
        if input_partition is None or (not ranges and _class_name(input_partition) != _KAFKA_INPUT_PARTITION):
            return ()
        offset_range = input_partition.offsetRange()
        ranges.append(InputRange(
            spark_partition=int(spark_partition.index()),
            topic=str(offset_range.topic()),
            partition=int(offset_range.partition()),
            from_offset=int(offset_range.fromOffset()),
            until_offset=int(offset_range.untilOffset()),
        ))
    return tuple(ranges)


def _batch_execution(batch: DataFrame, batch_id: int, session: SparkSession) -> tuple[Any, str]:
    """The query's execution of batch ``batch_id``, and the query's run id."""
    query_id = batch.sparkSession.sparkContext.getLocalProperty(QUERY_ID_PROPERTY)
    if not query_id:
        raise PlanReadError(
            f"batch {batch_id}: no streaming query id on this thread (local property {QUERY_ID_PROPERTY})",
            fix="call read_batch_plan inside the foreachBatch function, on the thread Spark calls it on",
        )
    query = session._jsparkSession.streams().get(query_id)
    if query is None:
        raise PlanReadError(
            f"batch {batch_id}: query {query_id} is not among the active queries of the session passed in",
            fix="pass the SparkSession that started the streaming query (not the DataFrame's own session)",
        )
    execution = query.streamingQuery().lastExecution()
    if execution is None or int(execution.currentBatchId()) != batch_id:
        found = "no execution" if execution is None else f"the execution of batch {execution.currentBatchId()}"
        raise PlanReadError(f"batch {batch_id}: query {query_id} holds {found}", fix=_UNREADABLE_FIX)
    return execution, str(query.runId().toString())


def _check_same_batch(scan: Any, ranges: tuple[InputRange, ...], batch_id: int) -> None:
    # The scan's end offsets are a constructor value (no planning). Each partition's last range
    # ends there (a source option may split a partition into several ranges).
    try:
        end = parse_kafka_offsets("the scan's end offsets", str(scan.end().json()), "the batch's Kafka scan")
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


@dataclass
class PlanMemo:
    """The plan tree of a query run's last batch, under the text Spark prints for it (see the module).

    One per query: the sink keeps it. ``hits`` and ``reads`` count the batches that reused the
    tree and those that read it node by node.
    """

    key: tuple[str, str] | None = None
    plan: PlainNode | None = None
    #: child indexes from the root to the one Kafka scan; ``None`` when the plan has not exactly one
    scan_path: tuple[int, ...] | None = None
    hits: int = 0
    reads: int = 0

    def scan_in(self, root: Any) -> Any | None:
        """The Kafka scan of ``root``, walked to along the remembered path; ``None`` if it is not there."""
        if self.scan_path is None or self.plan is None:
            return None
        node, plain = root, self.plan
        for index in self.scan_path:
            node, plain = _child_at(node, plain.name, index), plain.children[index]
        return node if _class_name(node) == KAFKA_SCAN else None


def read_batch_plan(batch: DataFrame, batch_id: int, session: SparkSession, memo: PlanMemo | None = None,
                    ) -> BatchPlan:
    """The executed plan of micro-batch ``batch_id`` and its Kafka scan's input ranges.

    Call it inside ``foreachBatch`` with the DataFrame Spark passed in.

    :param batch: the ``foreachBatch`` DataFrame.
    :param batch_id: the batch id passed with it.
    :param session: the SparkSession that started the query (the batch's own session is a clone
        without the query).
    :param memo: the query's :class:`PlanMemo`, to reuse the tree of an earlier batch of the same
        run that prints the same; ``None`` reads the whole tree.
    :returns: the plan as plain nodes, and the ranges in Spark partition order; the ranges are
        empty when the batch reads other than exactly one Kafka scan (no new input in a no-data
        batch, two scans, another source); such a plan is not aligned, and
        :func:`~airflow_provider_eos.core.plan_alignment.decide_alignment` names why.
    :raises PlanReadError: if the batch's plan cannot be found or is not the batch's.
    """
    sources = _data_source_rdds(_scanned_rdd(batch))
    ranges = _input_ranges(sources[0]) if len(sources) == 1 else ()
    execution, run_id = _batch_execution(batch, batch_id, session)
    root = execution.executedPlan()
    plan, scan = _remembered(memo, root, run_id) if memo is not None else (None, None)
    if plan is None:
        kafka_scans: list[tuple[tuple[int, ...], Any]] = []
        plan = _plain(root, (), kafka_scans)
        scan = kafka_scans[0][1] if len(kafka_scans) == 1 else None
        if memo is not None:
            memo.plan, memo.scan_path = plan, kafka_scans[0][0] if len(kafka_scans) == 1 else None
            memo.reads += 1
    if scan is not None and ranges:
        _check_same_batch(scan, ranges, batch_id)
    return BatchPlan(batch_id=batch_id, plan=plan, input_ranges=ranges)


def _remembered(memo: PlanMemo, root: Any, run_id: str) -> tuple[PlainNode | None, Any | None]:
    """The memo's tree and ``root``'s Kafka scan when ``root`` prints as the memo's plan did in this run."""
    # verbose off: each node as its simpleString(maxFields), which is what the plain tree describes it by.
    key = (run_id, str(root.treeString(False, False, _MAX_FIELDS, False, False)))
    if key != memo.key or memo.plan is None:
        memo.key, memo.plan, memo.scan_path = key, None, None
        return None, None
    scan = memo.scan_in(root)
    if scan is None and memo.scan_path is not None:
        return None, None  # not where the tree said: read it all
    memo.hits += 1
    return memo.plan, scan
