"""The input an ``available_now`` run had to process, and whether the sink group read all of it.

An ``available_now`` query takes its input's end offsets once, when it starts, processes up to
them and stops: input that arrives later is the next run's. A run that found nothing new commits
no batch, so a ``wait_healthy`` watch cannot tell it succeeded by a commit, and the live lag cannot
tell it either once new input arrived after the job ended. What tells it is the input's end
offsets read before the job started (:class:`RunInput`, recorded by the submit task in the XCom
:data:`RUN_INPUT_XCOM_KEY`): the query's own snapshot is taken later, so it ends at or beyond
them, and a group that read up to them read everything the run was given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.topic_partition import OffsetMap, PartitionRow, TopicPartition

if TYPE_CHECKING:
    from airflow_provider_eos.core.health.report import HealthReport

__all__ = ["RUN_INPUT_XCOM_KEY", "InputEnd", "RunInput", "input_left_behind"]

#: The XCom key under which the submit task records the :class:`RunInput` of its run.
RUN_INPUT_XCOM_KEY = "run_input"


class InputEnd(PartitionRow):
    """One input partition's end when the run started.

    :param tp: the partition.
    :param end: its last stable offset (``read_committed`` end, where the job's source stops).
    """

    end: int


class RunInput(FrozenModel):
    """Each input partition's end offset, read before the job of a run started.

    :param read_at_ms: when the ends were read (ms since the epoch, UTC).
    :param ends: one row per input partition.
    """

    read_at_ms: int
    ends: tuple[InputEnd, ...]

    @classmethod
    def of(cls, read_at_ms: int, ends: OffsetMap) -> RunInput:
        """Build from an offset map (sorted by partition, so equal maps give equal records)."""
        return cls(read_at_ms=read_at_ms, ends=tuple(InputEnd(tp=tp, end=end) for tp, end in sorted(ends.items())))


def input_left_behind(report: HealthReport, run_input: RunInput) -> tuple[TopicPartition, ...]:
    """The partitions whose input of the run the sink group has not read (empty: the run's input is all read).

    The group has read a partition up to its committed offset, or to the log start without one:
    ``lso - lag`` of the report's row (the lag is counted from that offset and never below 0). A
    partition of the run that the report does not show counts as left behind: nothing says it was
    read. Partitions created after the run started are not the run's.

    :param report: the newest health report.
    :param run_input: the input's ends when the run started.
    """
    rows = {row.tp: row for row in report.partitions}
    left = []
    for item in run_input.ends:
        row = rows.get(item.tp)
        if row is None or row.lso - row.lag < item.end:
            left.append(item.tp)
    return tuple(left)
