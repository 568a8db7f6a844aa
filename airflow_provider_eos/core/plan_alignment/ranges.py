"""The batch scan's input ranges as a map Spark partition -> Kafka range, and their check against the WAL.

An executor task looks itself up by its Spark partition index (:meth:`InputPartitionMap.for_spark_partition`)
and learns its Kafka partition ``p`` and ``[start_p, end_p)`` even when a filter dropped all its
rows or a projection dropped the source columns. Before any task runs, the driver checks every
range against the checkpoint's write-ahead log (:func:`cross_check`): the sink commits the WAL's
offsets, so a scan reading anything else would commit offsets for rows it did not write.

Spark leaves a Kafka partition without new input out of the scan (its range would be empty);
those are :meth:`InputPartitionMap.partitions_without_task`, which the driver commits itself.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from airflow_provider_eos.core.errors import PlanNotAlignedError, ScanRangeMismatchError
from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.plan_alignment.plan import InputRange
from airflow_provider_eos.core.plan_alignment.rules import SPLITTING_OPTIONS
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition

__all__ = ["InputPartitionMap", "cross_check", "map_input_partitions"]

_MISMATCH_FIX = (
    "Nothing was written for this batch. Check that the spec's checkpoint_location is this query's "
    "checkpoint and that nothing edited, copied or rewound it while the query ran (`eos verify --spec "
    "<spec file>` shows the checkpoint against the sink group); then restart the query so Spark plans "
    "the batch again from its write-ahead log. Do not delete offsets/<N> or switch writers to get past "
    "this: the batch's output and its committed offsets would no longer match."
)


class InputPartitionMap(FrozenModel):
    """Spark partition index -> the Kafka range it reads, for one micro-batch.

    Build it with :func:`map_input_partitions`, which checks that indexes are ``0..n-1`` and that
    no Kafka partition is read by two Spark partitions.
    """

    batch_id: int
    ranges: tuple[InputRange, ...]

    def for_spark_partition(self, index: int) -> InputRange:
        """The range Spark partition ``index`` reads.

        :raises ScanRangeMismatchError: if the batch scan has no such partition.
        """
        if not 0 <= index < len(self.ranges):
            raise ScanRangeMismatchError(
                f"batch {self.batch_id}: Spark partition {index} is not one of the Kafka scan's "
                f"{len(self.ranges)} input partitions",
                fix="the task does not belong to this batch's plan; fail the batch so Spark replans it",
            )
        return self.ranges[index]

    def by_partition(self) -> dict[TopicPartition, InputRange]:
        """The same ranges keyed by Kafka partition."""
        return {r.tp: r for r in self.ranges}

    def partitions_without_task(self, end: OffsetMap) -> list[TopicPartition]:
        """Partitions of the WAL's ``end`` that no Spark partition reads (no new input), sorted."""
        mapped = self.by_partition()
        return sorted(tp for tp in end if tp not in mapped)


def map_input_partitions(batch_id: int, ranges: Iterable[InputRange]) -> InputPartitionMap:
    """Index the batch scan's input ranges by Spark partition.

    :raises ScanRangeMismatchError: if indexes are not exactly ``0..n-1`` or a range runs backwards.
    :raises PlanNotAlignedError: if one Kafka partition is read by several Spark partitions (the
        source splits partitions: ``minPartitions`` or ``maxRecordsPerPartition``).
    """
    ordered = tuple(sorted(ranges, key=lambda r: r.spark_partition))
    indexes = [r.spark_partition for r in ordered]
    if indexes != list(range(len(ordered))):
        raise ScanRangeMismatchError(
            f"batch {batch_id}: the Kafka scan's input partitions have Spark partition indexes {indexes}, "
            f"expected 0..{len(ordered) - 1}",
            fix="the plan reader does not understand this Spark version's scan; use `writers: driver`",
        )
    backwards = [r.describe() for r in ordered if r.until_offset < r.from_offset]
    if backwards:
        raise ScanRangeMismatchError(
            f"batch {batch_id}: the Kafka scan reads ranges that end before they start: {', '.join(backwards)}",
            fix=_MISMATCH_FIX,
        )
    readers: dict[TopicPartition, list[int]] = defaultdict(list)
    for r in ordered:
        readers[r.tp].append(r.spark_partition)
    split = {tp: ix for tp, ix in sorted(readers.items()) if len(ix) > 1}
    if split:
        shown = "; ".join(f"{tp} by Spark partitions {ix}" for tp, ix in split.items())
        raise PlanNotAlignedError(
            f"batch {batch_id}: the Kafka scan reads one Kafka partition in several Spark partitions ({shown}), "
            "so several tasks would write for one partition",
            fix=f"remove the Kafka source option {' / '.join(SPLITTING_OPTIONS)}, or set `writers: driver`",
        )
    return InputPartitionMap(batch_id=batch_id, ranges=ordered)


def _span(start: int | None, end: int | None) -> str:
    return f"[{'?' if start is None else start}, {'?' if end is None else end})"


def cross_check(mapping: InputPartitionMap, *, start: OffsetMap, end: OffsetMap) -> None:
    """Check every scan range against the WAL's planned range ``[offsets/N-1, offsets/N)``.

    :param mapping: the batch scan's ranges.
    :param start: where the batch starts (``offsets/N-1``, or the initial offsets for batch 0);
        a partition absent here is new in this batch and Spark reads it from its earliest
        offset, which the checkpoint does not record, so only its end is checked.
    :param end: the batch's end offsets (``offsets/N``).
    :raises ScanRangeMismatchError: naming every partition whose scan range differs from the WAL's
        (both ranges), and every partition with planned input that no Spark partition reads.
    """
    problems: list[str] = []
    for r in mapping.ranges:
        planned = _span(start.get(r.tp), end.get(r.tp))
        if r.tp not in end:
            problems.append(f"{r.tp}: Spark partition {r.spark_partition} reads {_span(r.from_offset, r.until_offset)}"
                            " but the WAL plans nothing for this partition")
        elif r.until_offset != end[r.tp] or (r.tp in start and r.from_offset != start[r.tp]):
            problems.append(f"{r.tp}: Spark partition {r.spark_partition} reads "
                            f"{_span(r.from_offset, r.until_offset)}, the WAL plans {planned}")
    mapped = mapping.by_partition()
    for tp in sorted(end):
        if tp not in mapped and tp in start and end[tp] > start[tp]:
            problems.append(f"{tp}: the WAL plans {_span(start[tp], end[tp])} but no Spark partition reads it")
    if problems:
        raise ScanRangeMismatchError(
            f"batch {mapping.batch_id}: the Kafka scan's ranges disagree with the checkpoint's write-ahead log "
            f"(offsets/{mapping.batch_id - 1 if mapping.batch_id else 'initial'}..offsets/{mapping.batch_id}): "
            + "; ".join(problems),
            fix=_MISMATCH_FIX,
        )
