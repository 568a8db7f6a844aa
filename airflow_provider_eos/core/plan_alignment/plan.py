"""What a micro-batch's executed plan looks like to this package: plain values, no Spark.

:mod:`airflow_provider_eos.spark.plan_reader` reads them from Spark (one place); the rules of
:mod:`.rules` and :mod:`.ranges` judge them. Keeping the tree and the ranges as plain values is
what lets every rule be tested without a JVM.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.topic_partition import TopicPartition

__all__ = ["KAFKA_SCAN", "KAFKA_STREAM", "BatchPlan", "InputRange", "PlanNode"]

_LABEL_LIMIT = 100

#: Class name of the physical node that reads a micro-batch of a DataSource V2 stream.
KAFKA_SCAN = "MicroBatchScanExec"
#: Class name of the Kafka connector's micro-batch stream (the scan's ``stream`` detail).
KAFKA_STREAM = "KafkaMicroBatchStream"


class PlanNode(FrozenModel):
    """One operator of a physical plan.

    :param name: the operator's JVM class simple name (``ProjectExec``, ``ShuffleExchangeExec``):
        stable across Spark's display changes, so the rules key on it.
    :param description: Spark's one-line rendering (``Exchange RoundRobinPartitioning(4), ...``),
        shown to the operator in decisions and errors.
    :param details: facts the rules need about this node; for the Kafka scan: ``stream`` (the
        stream's class name) and the source options that split partitions, when set
        (``minPartitions``, ``maxRecordsPerPartition``).
    :param children: the operator's inputs.
    """

    name: str
    description: str = ""
    details: dict[str, str] = Field(default_factory=dict)
    children: tuple[PlanNode, ...] = ()

    def walk(self) -> Iterator[PlanNode]:
        """This node and every node below it, depth first, parents before children."""
        yield self
        for child in self.children:
            yield from child.walk()

    def label(self) -> str:
        """How decisions name the node: Spark's rendering, cut short, and the class.

        ``Exchange RoundRobinPartitioning(4), ... (ShuffleExchangeExec)``; stateful operators render
        their whole state info, whose start is enough to say which one.
        """
        shown = self.description.strip() or self.name
        if len(shown) > _LABEL_LIMIT:
            shown = shown[: _LABEL_LIMIT - 3] + "..."
        return shown if shown == self.name else f"{shown} ({self.name})"

    def render(self, indent: int = 0) -> str:
        """The tree as indented lines of class names, for logs and assertion messages."""
        lines = ["  " * indent + self.name]
        lines.extend(child.render(indent + 1) for child in self.children)
        return "\n".join(lines)


class InputRange(FrozenModel):
    """What one Spark partition of the batch scan reads: a Kafka topic-partition's ``[from, until)``.

    Offsets mean "next offset to read", as in the checkpoint and in committed group offsets.
    """

    spark_partition: int
    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def tp(self) -> TopicPartition:
        """The Kafka partition as the key of offset maps."""
        return TopicPartition(self.topic, self.partition)

    def describe(self) -> str:
        """``topic-2 [10, 25)``."""
        return f"{self.tp} [{self.from_offset}, {self.until_offset})"


class BatchPlan(FrozenModel):
    """A micro-batch's executed plan and its Kafka scan's input ranges, as read from Spark.

    :param batch_id: the micro-batch id ``N``.
    :param plan: the executed physical plan of the query for this batch (not the ``foreachBatch``
        DataFrame's own plan, which Spark reduces to a scan of an existing RDD).
    :param input_ranges: the Kafka scan's input partitions in Spark partition order.
    """

    batch_id: int
    plan: PlanNode
    input_ranges: tuple[InputRange, ...]
