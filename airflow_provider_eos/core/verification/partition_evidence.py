"""What the verdict rules compare for one input partition, read lazily (:mod:`.partition_rules` judges it).

Two sides meet per partition: the checkpoint's (:class:`CheckpointSide`: its query id, last
committed batch ``C``, last planned batch, and the write-ahead log ``offsets/N``) and the sink
group's (its committed offset and the batch marker in that offset's metadata).
:class:`PartitionEvidence` holds both and names each value a rule reads.

The WAL is read lazily, at most once per distinct batch (:class:`Wal`), and each distinct
metadata string is decoded once (:class:`Markers`), so verifying thousands of partitions stays
O(partitions) dictionary work. A rule that does not need ``offsets/M`` (a foreign query's
marker, say) never causes it to be read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

from airflow_provider_eos.core.errors import MarkerError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset
from airflow_provider_eos.core.offsets_expiry import OffsetsExpiry
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition

__all__ = ["CheckpointSide", "Markers", "OffsetsSource", "PartitionEvidence", "Wal"]

OffsetsSource = Mapping[int, OffsetMap] | Callable[[int], OffsetMap | None]
"""Where :func:`~airflow_provider_eos.core.verification.verify` reads ``offsets/N``: a mapping of
the batches at hand, or a callable returning ``None`` for a batch the checkpoint no longer (or
never) had."""


class Wal:
    """Memoizing view of ``offsets/N`` so each batch is read at most once per verification."""

    def __init__(self, source: OffsetsSource) -> None:
        if isinstance(source, Mapping):
            self._read: Callable[[int], OffsetMap | None] = source.get
        else:
            self._read = source
        self._cache: dict[int, OffsetMap | None] = {}

    def __call__(self, batch: int) -> OffsetMap | None:
        if batch < 0:
            return None
        if batch not in self._cache:
            self._cache[batch] = self._read(batch)
        return self._cache[batch]


class Markers:
    """Decodes each distinct metadata string once: the sink writes one marker per batch, so
    thousands of partitions usually share a single string."""

    def __init__(self) -> None:
        self._cache: dict[str, BatchMarker | MarkerError | None] = {}

    def __call__(self, committed: CommittedOffset) -> BatchMarker | None:
        metadata = committed.metadata
        if metadata not in self._cache:
            try:
                self._cache[metadata] = committed.marker
            except MarkerError as exc:
                self._cache[metadata] = exc
        found = self._cache[metadata]
        if isinstance(found, MarkerError):
            raise found
        return found


@dataclass(frozen=True)
class CheckpointSide:
    """The checkpoint's side of every partition's comparison, shared by all partitions of one verification.

    :param query_id: the checkpoint's query id ``Q`` (``None``: no ``metadata`` file, so every marker is foreign).
    :param last_committed_batch: ``C``, the last batch with a ``commits/N`` file (``None``: none).
    :param last_planned_batch: the last batch with an ``offsets/N`` file (``None``: none).
    :param wal: the lazily read ``offsets/N``.
    :param expiry: whether offsets the planned, uncommitted batch ``C+1`` committed may have expired by now
        (``None``: not judged, or no such batch): then a group holding nothing proves nothing about it.
    """

    query_id: str | None
    last_committed_batch: int | None
    last_planned_batch: int | None
    wal: Wal
    expiry: OffsetsExpiry | None = None

    @property
    def next_batch(self) -> int:
        """``C+1`` (``0`` before the first commit): the one batch a crash may leave in Kafka but not committed."""
        return 0 if self.last_committed_batch is None else self.last_committed_batch + 1

    def has_planned(self, batch: int) -> bool:
        """Whether the checkpoint planned ``batch`` (wrote ``offsets/batch``, retained or not)."""
        return self.last_planned_batch is not None and batch <= self.last_planned_batch


@dataclass(frozen=True)
class PartitionEvidence:
    """Both sides of one input partition's comparison, and the values the rules read from them.

    :param tp: the input partition.
    :param checkpoint: the checkpoint's side.
    :param checkpoint_offset: ``offsets/C`` for ``tp`` (``None``: the partition is not in it, or nothing is committed).
    :param group_offset: the sink group's committed offset with its metadata (``None``: the group holds nothing).
    :param markers: the decoder of the group's metadata, shared by the partitions of one verification
        so each distinct string is decoded once.
    """

    tp: TopicPartition
    checkpoint: CheckpointSide
    checkpoint_offset: int | None
    group_offset: CommittedOffset | None
    markers: Markers

    @cached_property
    def _marker_reading(self) -> BatchMarker | MarkerError | None:
        # Decoded once per evidence: several rules ask, and only the first may see the error.
        if self.group_offset is None:
            return None
        try:
            return self.markers(self.group_offset)
        except MarkerError as exc:
            return exc

    @property
    def marker(self) -> BatchMarker | None:
        """The batch marker in the group offset's metadata (``None``: no offset, empty or unreadable metadata)."""
        reading = self._marker_reading
        return reading if isinstance(reading, BatchMarker) else None

    @property
    def marker_error(self) -> MarkerError | None:
        """Why the group offset's metadata is not a batch marker (``None``: it is one, or it is empty)."""
        reading = self._marker_reading
        return reading if isinstance(reading, MarkerError) else None

    @cached_property
    def marker_batch_offsets(self) -> OffsetMap | None:
        """``offsets/M`` for the marker's batch ``M`` (``None``: no marker, or the checkpoint does not have it).

        Read on first use only: the rules that come before it must not cause a read of a batch
        the checkpoint never planned.
        """
        marker = self.marker
        return None if marker is None else self.checkpoint.wal(marker.batch_id)

    @property
    def wal_offset(self) -> int | None:
        """``offsets/M`` for this partition: what the group offset must equal (``None``: unknown)."""
        planned = self.marker_batch_offsets
        return None if planned is None else planned.get(self.tp)
