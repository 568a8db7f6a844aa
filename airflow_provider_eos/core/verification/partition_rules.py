"""The verdict rules for one input partition, and the lazy readers of the WAL and the markers they use.

:func:`classify_partition` applies the table of :mod:`.verdict` to one partition, in the order
that makes the first failing condition the one reported: no committed offset, unreadable or
empty marker, foreign query id, marker batch out of range, offset differing from
``offsets/M``, then ahead / in sync / behind.

**Nothing to verify.** A partition for which the checkpoint has committed nothing and the
group holds nothing (a pipeline that has not finished its first batch, or a partition the
query has not discovered yet) is ``IN_SYNC`` with a detail saying so. It is healthy, needs no
action, and a separate verdict would force every consumer to treat it like ``IN_SYNC``.

The WAL is read lazily, at most once per distinct batch (:class:`Wal`), and each distinct
metadata string is decoded once (:class:`Markers`), so verifying thousands of partitions stays
O(partitions) dictionary work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from airflow_provider_eos.core.errors import MarkerError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition
from airflow_provider_eos.core.verification.verdict import PartitionVerdict, Verdict

__all__ = ["Markers", "OffsetsSource", "Wal", "classify_partition"]

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


def classify_partition(
    tp: TopicPartition,
    *,
    query_id: str | None,
    c: int,
    p: int,
    checkpoint_offset: int | None,
    committed: CommittedOffset | None,
    wal: Wal,
    markers: Markers,
) -> PartitionVerdict:
    """Classify one partition; ``c``/``p`` are the last committed/planned batch or -1."""
    checkpoint_batch = c if c >= 0 else None

    def row(
        verdict: Verdict,
        detail: str,
        *,
        marker: BatchMarker | None = None,
        wal_offset: int | None = None,
    ) -> PartitionVerdict:
        return PartitionVerdict(
            tp=tp,
            verdict=verdict,
            checkpoint_batch=checkpoint_batch,
            checkpoint_offset=checkpoint_offset,
            group_offset=None if committed is None else committed.offset,
            marker_batch=None if marker is None else marker.batch_id,
            marker_query_id=None if marker is None else marker.query_id,
            wal_offset=wal_offset,
            detail=detail,
        )

    if committed is None:
        if c < 0:
            return row(Verdict.IN_SYNC, "nothing to verify: no batch committed and the group holds nothing")
        if checkpoint_offset is None:
            return row(
                Verdict.IN_SYNC,
                f"nothing to verify: not in offsets/{c} and the group holds nothing",
            )
        return row(
            Verdict.NO_MARKER,
            f"the checkpoint committed batch {c} (offset {checkpoint_offset}) "
            "but the group has no committed offset",
        )

    try:
        marker = markers(committed)
    except MarkerError as exc:
        return row(Verdict.DIVERGED, f"the group's offset metadata is not a batch marker: {exc.message}")
    if marker is None:
        return row(
            Verdict.NO_MARKER,
            f"the group committed offset {committed.offset} without a batch marker (empty metadata)",
        )
    if marker.query_id != query_id:
        return row(
            Verdict.DIVERGED,
            f"the marker names query {marker.query_id}, the checkpoint is query {query_id or '(none)'}",
            marker=marker,
        )

    m = marker.batch_id
    if m > c + 1:
        return row(
            Verdict.DIVERGED,
            f"the marker names batch {m}, more than one batch after the last committed batch "
            f"{c if c >= 0 else '(none)'}",
            marker=marker,
        )
    if m > p:
        return row(
            Verdict.DIVERGED,
            f"the marker names batch {m} but the checkpoint has not planned it "
            f"(last planned batch {p if p >= 0 else '(none)'})",
            marker=marker,
        )
    planned = wal(m)
    expected = None if planned is None else planned.get(tp)
    if planned is not None and expected is None:
        return row(
            Verdict.DIVERGED,
            f"the marker names batch {m} but offsets/{m} does not list this partition",
            marker=marker,
        )
    if expected is not None and committed.offset != expected:
        return row(
            Verdict.DIVERGED,
            f"the group's offset {committed.offset} differs from offsets/{m} ({expected}) "
            f"although the marker names batch {m}",
            marker=marker,
            wal_offset=expected,
        )

    if m == c + 1:
        if expected is None:
            return row(
                Verdict.DIVERGED,
                f"the marker names the planned batch {m} but offsets/{m} could not be read",
                marker=marker,
            )
        return row(
            Verdict.KAFKA_AHEAD_SAFE,
            f"batch {m} is in Kafka, commits/{m} is missing: the replay skips it",
            marker=marker,
            wal_offset=expected,
        )
    if m == c:
        return row(Verdict.IN_SYNC, f"marker and offset match batch {c}", marker=marker, wal_offset=expected)
    missing = f"{m + 1}..{c}" if m + 1 < c else str(c)
    unchecked = (
        ""
        if expected is not None
        else f"; offsets/{m} is no longer in the checkpoint, so the offset is unchecked and "
        f"a rewind to batch {m} will be refused"
    )
    return row(
        Verdict.KAFKA_BEHIND,
        f"output of batch(es) {missing} is missing: rewind the checkpoint to batch {m}{unchecked}",
        marker=marker,
        wal_offset=expected,
    )
