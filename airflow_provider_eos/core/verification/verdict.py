"""The verification verdicts and the row that carries one per input partition (docs/architecture.md, verdicts).

Per input partition, the checkpoint (last committed batch ``C``, last planned batch, the
write-ahead log ``offsets/N``, query id ``Q``) is compared with the sink group's committed
offset and its batch marker:

================  =====================================================================
verdict           condition
================  =====================================================================
IN_SYNC           marker = ``C`` of ``Q`` and offset = ``offsets/C``
KAFKA_AHEAD_SAFE  marker = ``C+1`` of ``Q``, offset = ``offsets/C+1``, ``commits/C+1``
                  missing: Spark replays ``C+1`` and the sink skips it
KAFKA_BEHIND      marker = ``M < C`` of ``Q`` and offset = ``offsets/M``: the output of
                  batches ``M+1..C`` is missing; rewind the checkpoint to ``M``
NO_MARKER         the checkpoint has commits but the group has no offset, or an offset
                  without marker metadata
DIVERGED          offset differs from ``offsets/M``, marker > ``C+1``, a foreign query
                  id, unreadable metadata, or a marker for a batch the checkpoint has not
                  planned / a partition the checkpoint's ``offsets/M`` does not list
================  =====================================================================

The overall verdict is the worst row by :attr:`Verdict.severity`:
``IN_SYNC < KAFKA_AHEAD_SAFE < KAFKA_BEHIND < NO_MARKER < DIVERGED``. ``KAFKA_AHEAD_SAFE``
heals itself; ``KAFKA_BEHIND`` has a known cause and a mechanical fix (rewind);
``NO_MARKER`` means the group tells nothing about what was produced (wrong group, or the
sink never ran), so a human must decide before any repair; ``DIVERGED`` is evidence that
something other than this pipeline's sink wrote, and only manual work is safe. Ranking the
worse states higher means a report never suggests a mechanical fix while a partition needs
a human.
"""

from __future__ import annotations

import enum

from airflow_provider_eos.core.topic_partition import PartitionRow

__all__ = ["PartitionVerdict", "Verdict"]


class Verdict(enum.StrEnum):
    """Per-partition and overall verification verdicts (docs/architecture.md, verdicts)."""

    IN_SYNC = "IN_SYNC"
    KAFKA_AHEAD_SAFE = "KAFKA_AHEAD_SAFE"
    KAFKA_BEHIND = "KAFKA_BEHIND"
    NO_MARKER = "NO_MARKER"
    DIVERGED = "DIVERGED"

    @property
    def severity(self) -> int:
        """Rank used to pick the overall verdict; higher is worse (see the module docstring)."""
        return _SEVERITY[self]

    @property
    def ok(self) -> bool:
        """True when the pipeline may resume without any action."""
        return self in (Verdict.IN_SYNC, Verdict.KAFKA_AHEAD_SAFE)


_SEVERITY: dict[Verdict, int] = {verdict: rank for rank, verdict in enumerate(Verdict)}


class PartitionVerdict(PartitionRow):
    """The comparison for one input partition.

    :param tp: the input partition.
    :param verdict: the verdict for this partition.
    :param checkpoint_batch: the last committed batch ``C`` (``None``: nothing committed).
    :param checkpoint_offset: ``offsets/C`` for this partition (``None``: not in ``offsets/C``).
    :param group_offset: the group's committed offset (``None``: nothing committed).
    :param marker_batch: the batch named by the group's marker, if readable.
    :param marker_query_id: the query id named by the group's marker, if readable.
    :param wal_offset: ``offsets/M`` for this partition where ``M`` is the marker's batch,
        i.e. what the group's offset must equal (``None`` when not applicable or unknown).
    :param detail: one sentence explaining the verdict with the values involved.
    """

    verdict: Verdict
    checkpoint_batch: int | None
    checkpoint_offset: int | None
    group_offset: int | None
    marker_batch: int | None
    marker_query_id: str | None
    wal_offset: int | None
    detail: str
