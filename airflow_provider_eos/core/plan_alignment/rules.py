"""Is a micro-batch plan partition-aligned with its Kafka source (docs/architecture.md, executor writers)?

Executor writers give Spark partition ``i`` of the batch the transaction of the Kafka partition
that the scan's input partition ``i`` reads. That is right only when every row of output
partition ``i`` came from input partition ``i`` and from no other, which holds when every
operator between the scan and the output keeps rows in their partition, one partition in, the
same partition out. The rules:

- no stateful operator (aggregation state, session windows, streaming deduplication,
  ``flatMapGroupsWithState``, ``transformWithState``, stream-stream joins, streaming limits):
  their output depends on other partitions' rows and on earlier batches;
- no source option that splits a Kafka partition over several Spark partitions
  (``minPartitions``, ``maxRecordsPerPartition``): two tasks would claim one transactional id;
- exactly one Kafka micro-batch scan;
- no exchange (shuffle, ``repartition``, broadcast; see below), no join, no coalesce, no limit
  that gathers partitions; adaptive execution's wrappers (``AdaptiveSparkPlanExec``, query
  stages, reused exchanges; Spark 4.2 runs a stateless micro-batch with a shuffle adaptively)
  are judged by the plan they wrap;
- no ``Union``: Spark's union concatenates its children's partitions, so partition indexes no
  longer match the scan's, and a union of two branches of the same source (``valid`` plus
  ``dead letters``) gives one Kafka partition two tasks that would fence each other and both
  commit its offsets; write such branches as one projection (``F.when``), as ``json_enrich`` does;
- any other operator is judged not aligned until it is known to be narrow (an allowlist, not a
  denylist): a new Spark operator then falls back to the driver writer instead of risking a
  duplicate.

A broadcast exchange is refused although a stream-static broadcast hash join keeps the stream's
partitions: a broadcast nested-loop join that must emit unmatched broadcast rows adds partitions
of its own, and telling the two apart needs the join's build side and type. The driver writer
covers such plans; a finer rule can come later with its own tests.

Where several operators break alignment, the decision names the most fundamental first
(stateful before source options before exchanges ...), so ``fraud_alerts``, a stateful
aggregation unioned with its dead letters, is reported as stateful.
"""

from __future__ import annotations

import enum

from airflow_provider_eos.core.errors import PlanNotAlignedError
from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.plan_alignment.plan import KAFKA_SCAN, KAFKA_STREAM, PlanNode

__all__ = [
    "NARROW_OPERATORS", "SPLITTING_OPTIONS", "WRAPPERS", "Breach", "Offender", "PlanAlignment", "decide_alignment",
]

#: Kafka source options under which one topic-partition is read by several Spark partitions.
SPLITTING_OPTIONS = ("minPartitions", "maxRecordsPerPartition")

_DRIVER_FIX = "set `writers: driver` in the pipeline spec (one transaction per batch on the driver works for any plan)"


class Breach(enum.Enum):
    """Why an operator breaks alignment; declaration order is the order of importance."""

    STATEFUL = "stateful"
    SOURCE_SPLIT = "source_split"
    SOURCE = "source"
    EXCHANGE = "exchange"
    UNION = "union"
    JOIN = "join"
    COALESCE = "coalesce"
    LIMIT = "limit"
    UNKNOWN = "unknown"


_STATEFUL = frozenset({
    "StateStoreRestoreExec", "StateStoreSaveExec", "SessionWindowStateStoreRestoreExec",
    "SessionWindowStateStoreSaveExec", "StreamingDeduplicateExec", "StreamingDeduplicateWithinWatermarkExec",
    "FlatMapGroupsWithStateExec", "FlatMapGroupsInPandasWithStateExec", "TransformWithStateExec",
    "TransformWithStateInPySparkExec", "TransformWithStateInPandasExec", "StreamingSymmetricHashJoinExec",
    "StreamingGlobalLimitExec",
})
_EXCHANGES = frozenset({"ShuffleExchangeExec", "BroadcastExchangeExec", "AQEShuffleReadExec"})
_UNIONS = frozenset({"UnionExec"})
_JOINS = frozenset({
    "BroadcastHashJoinExec", "BroadcastNestedLoopJoinExec", "CartesianProductExec", "ShuffledHashJoinExec",
    "SortMergeJoinExec", "CoGroupExec", "FlatMapCoGroupsInPandasExec", "FlatMapCoGroupsInArrowExec",
})
_COALESCES = frozenset({"CoalesceExec"})
_LIMITS = frozenset({"CollectLimitExec", "GlobalLimitExec", "TakeOrderedAndProjectExec", "CollectTailExec",
                     "StreamingLocalLimitExec"})

#: Adaptive execution's wrappers, judged by what they wrap (the plan reader gives it as their child):
#: the adaptive root, a query stage (over the exchange it materialized), a reused exchange.
WRAPPERS = frozenset({
    "AdaptiveSparkPlanExec", "ShuffleQueryStageExec", "BroadcastQueryStageExec", "TableCacheQueryStageExec",
    "ResultQueryStageExec", "ReusedExchangeExec",
})

#: Operators known to map Spark partition ``i`` of their one child to their partition ``i``.
NARROW_OPERATORS = frozenset({
    KAFKA_SCAN, "WholeStageCodegenExec", "InputAdapter", "ProjectExec", "FilterExec", "ColumnarToRowExec",
    "RowToColumnarExec", "SerializeFromObjectExec", "DeserializeToObjectExec", "MapElementsExec",
    "MapPartitionsExec", "AppendColumnsExec", "AppendColumnsWithObjectExec", "GenerateExec", "ExpandExec",
    "SampleExec", "SortExec", "LocalLimitExec", "EventTimeWatermarkExec", "CollectMetricsExec",
    "BatchEvalPythonExec", "ArrowEvalPythonExec", "BatchEvalPythonUDTFExec", "ArrowEvalPythonUDTFExec",
    "MapInPandasExec", "MapInArrowExec",
})

_BY_NAME: dict[str, Breach] = {
    **dict.fromkeys(_STATEFUL, Breach.STATEFUL),
    **dict.fromkeys(_EXCHANGES, Breach.EXCHANGE),
    **dict.fromkeys(_UNIONS, Breach.UNION),
    **dict.fromkeys(_JOINS, Breach.JOIN),
    **dict.fromkeys(_COALESCES, Breach.COALESCE),
    **dict.fromkeys(_LIMITS, Breach.LIMIT),
}

_WHY = {
    Breach.STATEFUL: "is a stateful operator: its output depends on rows of other partitions and earlier batches",
    Breach.EXCHANGE: "moves rows between Spark partitions (an exchange)",
    Breach.UNION: "concatenates the partitions of its inputs, so Spark partition indexes no longer match the "
    "Kafka scan's (and a union of two branches of one source gives a Kafka partition two tasks)",
    Breach.JOIN: "combines the partitions of two inputs",
    Breach.COALESCE: "merges Spark partitions",
    Breach.LIMIT: "gathers rows from several partitions",
    Breach.UNKNOWN: "is not known to keep every row in the Spark partition of the Kafka input partition it was "
    "read from",
}

_FIX = {
    Breach.STATEFUL: _DRIVER_FIX + "; stateful plans always need it",
    Breach.SOURCE_SPLIT: "remove the Kafka source option {option}, or " + _DRIVER_FIX,
    Breach.SOURCE: "read exactly one Kafka source per query, or " + _DRIVER_FIX,
    Breach.EXCHANGE: "remove the repartition, join or aggregation that needs the exchange, or " + _DRIVER_FIX,
    Breach.UNION: "write the branches as one projection (F.when ... otherwise, as the json_enrich transform "
    "does), or " + _DRIVER_FIX,
    Breach.JOIN: "remove the join, or " + _DRIVER_FIX,
    Breach.COALESCE: "remove the coalesce, or " + _DRIVER_FIX,
    Breach.LIMIT: "remove the limit, or " + _DRIVER_FIX,
    Breach.UNKNOWN: _DRIVER_FIX + "; if the operator is narrow, report it so it can join the known narrow "
    "operators",
}


class Offender(FrozenModel):
    """One operator (or source option) that breaks alignment.

    :param operator: how people know it: Spark's rendering and class, or the option and its value.
    :param name: one word for log lines: the operator's class or the option's name.
    """

    breach: Breach
    operator: str
    why: str
    fix: str
    name: str = ""

    def describe(self) -> str:
        return f"{self.operator} {self.why}"


class PlanAlignment(FrozenModel):
    """The decision: aligned, or not and why. ``offenders`` is ordered most fundamental first."""

    offenders: tuple[Offender, ...] = ()

    @property
    def aligned(self) -> bool:
        return not self.offenders

    @property
    def operator(self) -> str | None:
        """The operator (or option) that breaks alignment first, ``None`` when aligned."""
        return self.offenders[0].operator if self.offenders else None

    @property
    def reason(self) -> str:
        if self.aligned:
            return "the plan is partition-aligned with its Kafka source: every operator is narrow"
        return "the plan is not partition-aligned with its Kafka source: " + "; ".join(
            o.describe() for o in self.offenders
        )

    @property
    def operator_name(self) -> str | None:
        """The class (or option name) of :attr:`operator`: one word, for log lines."""
        return self.offenders[0].name if self.offenders else None

    @property
    def fix(self) -> str | None:
        return self.offenders[0].fix if self.offenders else None

    def require_aligned(self) -> None:
        """For ``writers: executors``.

        :raises PlanNotAlignedError: naming the operator that breaks alignment and the fix.
        """
        if not self.aligned:
            raise PlanNotAlignedError(f"writers: executors cannot run this query: {self.reason}", fix=self.fix)


def _offender(breach: Breach, operator: str, why: str | None = None, fix: str | None = None, *,
              name: str) -> Offender:
    return Offender(breach=breach, operator=operator, why=why or _WHY[breach], fix=fix or _FIX[breach], name=name)


def _scan_offenders(scans: list[PlanNode]) -> list[Offender]:
    if len(scans) != 1:
        found = ", ".join(s.label() for s in scans) or "none"
        return [_offender(Breach.SOURCE, f"{len(scans)} micro-batch scans",
                          f"where exactly one Kafka micro-batch scan is needed (found: {found})", name=KAFKA_SCAN)]
    scan = scans[0]
    stream = scan.details.get("stream", "")
    if stream != KAFKA_STREAM:
        return [_offender(Breach.SOURCE, scan.label(), f"reads {stream or 'an unknown stream'}, not Kafka",
                          name=stream or KAFKA_SCAN)]
    found = []
    for option in SPLITTING_OPTIONS:
        value = scan.details.get(option)
        if value is not None:
            found.append(_offender(
                Breach.SOURCE_SPLIT, f"Kafka source option {option}={value}",
                "splits a Kafka partition over several Spark partitions, so two tasks would write for one "
                "partition", _FIX[Breach.SOURCE_SPLIT].format(option=option), name=option,
            ))
    return found


def decide_alignment(plan: PlanNode) -> PlanAlignment:
    """Decide whether ``plan`` (a micro-batch's executed physical plan) is partition-aligned.

    :param plan: the root of the executed plan, as read by :mod:`airflow_provider_eos.spark.plan_reader`.
    :returns: the decision; every offending operator, most fundamental first.
    """
    offenders: list[Offender] = []
    scans: list[PlanNode] = []
    for node in plan.walk():
        if node.name == KAFKA_SCAN:
            scans.append(node)
        elif node.name in _BY_NAME:
            offenders.append(_offender(_BY_NAME[node.name], node.label(), name=node.name))
        elif node.name not in NARROW_OPERATORS and node.name not in WRAPPERS:
            offenders.append(_offender(Breach.UNKNOWN, node.label(), name=node.name))
    offenders.extend(_scan_offenders(scans))
    order = list(Breach)
    # Stable: within one kind, the operator nearest the output comes first.
    return PlanAlignment(offenders=tuple(sorted(offenders, key=lambda o: order.index(o.breach))))
