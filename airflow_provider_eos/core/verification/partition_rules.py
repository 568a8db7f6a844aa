"""The verdict rules for one input partition, one predicate each, in the spirit of LinkedIn Burrow's evaluator.

Each rule reads the :class:`~.partition_evidence.PartitionEvidence` of one partition (``C`` the
checkpoint's last committed batch, ``M`` the batch the group's marker names) and returns a
:class:`Ruling` when it applies, ``None`` when the next rule decides. :func:`classify_partition`
tries them in the order of :data:`PARTITION_RULES`, so the first failing condition is the one
reported; :func:`kafka_behind` decides when none applies:

=================================== ================ =================================================
rule                                verdict          applies when
=================================== ================ =================================================
:func:`nothing_left_after_expiry`   NO_MARKER        the group holds nothing and batch ``C+1`` (in
                                                     flight) was planned at least
                                                     ``offsets.retention.minutes`` ago: it may have
                                                     committed and expired
:func:`nothing_committed_yet`       IN_SYNC          no batch committed and the group holds nothing
:func:`partition_new_to_checkpoint` IN_SYNC          the group holds nothing and ``offsets/C`` does not
                                                     list the partition
:func:`group_offset_missing`        NO_MARKER        the checkpoint committed it, the group holds nothing
:func:`marker_unreadable`           DIVERGED         the group offset's metadata is not a batch marker
:func:`marker_missing`              NO_MARKER        the group offset has empty metadata
:func:`marker_of_other_query`       DIVERGED         the marker names a query other than the checkpoint's
:func:`marker_beyond_next_batch`    DIVERGED         ``M > C+1``
:func:`marker_batch_unplanned`      DIVERGED         the checkpoint has not planned ``M``
:func:`partition_not_in_wal`        DIVERGED         ``offsets/M`` does not list the partition
:func:`group_offset_differs`        DIVERGED         the group offset differs from ``offsets/M``
:func:`next_batch_unreadable`       DIVERGED         ``M = C+1`` and ``offsets/M`` could not be read
:func:`next_batch_in_kafka`         KAFKA_AHEAD_SAFE ``M = C+1``: the replay skips it
:func:`marker_at_last_commit`       IN_SYNC          ``M = C``
:func:`kafka_behind`                KAFKA_BEHIND     otherwise (``M < C``): rewind to ``M``
=================================== ================ =================================================

**Nothing to verify.** A partition for which the checkpoint has committed nothing and the
group holds nothing (a pipeline that has not finished its first batch, or a partition the
query has not discovered yet) is ``IN_SYNC`` with a detail saying so. It is healthy, needs no
action, and a separate verdict would force every consumer to treat it like ``IN_SYNC``.

Each rule may assume the rules before it did not apply (as Burrow's do): a rule after
:func:`group_offset_missing` knows the group holds an offset, one after
:func:`group_offset_differs` that the offset matches ``offsets/M`` when that is known.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from airflow_provider_eos.core.verification.partition_evidence import (
    CheckpointSide,
    Markers,
    OffsetsSource,
    PartitionEvidence,
    Wal,
)
from airflow_provider_eos.core.verification.verdict import PartitionVerdict, Verdict

__all__ = [
    "PARTITION_RULES",
    "CheckpointSide",
    "Markers",
    "OffsetsSource",
    "PartitionEvidence",
    "PartitionRule",
    "Ruling",
    "Wal",
    "classify_partition",
    "deciding_rule",
    "group_offset_differs",
    "group_offset_missing",
    "kafka_behind",
    "marker_at_last_commit",
    "marker_batch_unplanned",
    "marker_beyond_next_batch",
    "marker_missing",
    "marker_of_other_query",
    "marker_unreadable",
    "next_batch_in_kafka",
    "next_batch_unreadable",
    "nothing_committed_yet",
    "nothing_left_after_expiry",
    "partition_new_to_checkpoint",
    "partition_not_in_wal",
]


class Ruling(NamedTuple):
    """A rule's verdict on one partition.

    :param verdict: the verdict.
    :param detail: one sentence explaining it with the values involved.
    :param wal_offset: ``offsets/M`` for the partition when the rule compared against it, else ``None``.
    """

    verdict: Verdict
    detail: str
    wal_offset: int | None = None


#: A verdict rule: a ruling when it applies to the partition, ``None`` when the next rule decides.
PartitionRule = Callable[[PartitionEvidence], Ruling | None]


def _batch_or_none(batch: int | None) -> str:
    return "(none)" if batch is None else str(batch)


def nothing_left_after_expiry(e: PartitionEvidence) -> Ruling | None:
    """NO_MARKER when the group holds nothing and an attempt of batch ``C+1`` may have committed, the broker
    deleting the offsets since (docs/design-notes.md notes 55 and 61): the sink refuses the replay.

    Where ``C+1`` takes nothing for "not written yet" (no batch committed, a partition ``offsets/C`` does not
    list) the absence proves nothing; on a partition of ``offsets/C`` it is ``NO_MARKER`` anyway, and only
    this rule says that aligning to ``C`` may make the replay write ``C+1`` a second time.
    """
    expiry = e.checkpoint.expiry
    if e.group_offset is not None or expiry is None or not expiry.may_have_expired:
        return None
    return Ruling(
        Verdict.NO_MARKER,
        f"the group holds nothing, but {expiry.describe()}: batch {expiry.batch_id} may be in the output topic "
        "already, and the sink refuses to write it again",
    )


def nothing_committed_yet(e: PartitionEvidence) -> Ruling | None:
    """IN_SYNC when the checkpoint committed no batch and the group holds nothing: a pipeline before its first batch."""
    if e.group_offset is not None or e.checkpoint.last_committed_batch is not None:
        return None
    return Ruling(Verdict.IN_SYNC, "nothing to verify: no batch committed and the group holds nothing")


def partition_new_to_checkpoint(e: PartitionEvidence) -> Ruling | None:
    """IN_SYNC when the group holds nothing and ``offsets/C`` does not list the partition: not discovered yet."""
    if e.group_offset is not None or e.checkpoint_offset is not None or e.checkpoint.last_committed_batch is None:
        return None
    return Ruling(
        Verdict.IN_SYNC,
        f"nothing to verify: not in offsets/{e.checkpoint.last_committed_batch} and the group holds nothing",
    )


def group_offset_missing(e: PartitionEvidence) -> Ruling | None:
    """NO_MARKER when the checkpoint committed the partition but the group holds no offset for it."""
    if e.group_offset is not None:
        return None
    return Ruling(
        Verdict.NO_MARKER,
        f"the checkpoint committed batch {e.checkpoint.last_committed_batch} (offset {e.checkpoint_offset}) "
        "but the group has no committed offset",
    )


def marker_unreadable(e: PartitionEvidence) -> Ruling | None:
    """DIVERGED when the group offset's metadata is not a batch marker: something else committed it."""
    if e.marker_error is None:
        return None
    return Ruling(Verdict.DIVERGED, f"the group's offset metadata is not a batch marker: {e.marker_error.message}")


def marker_missing(e: PartitionEvidence) -> Ruling | None:
    """NO_MARKER when the group offset carries empty metadata: it tells nothing about what was produced."""
    if e.group_offset is None or e.marker is not None or e.marker_error is not None:
        return None
    return Ruling(
        Verdict.NO_MARKER,
        f"the group committed offset {e.group_offset.offset} without a batch marker (empty metadata)",
    )


def marker_of_other_query(e: PartitionEvidence) -> Ruling | None:
    """DIVERGED when the marker names a query other than the checkpoint's (another checkpoint wrote the group)."""
    if e.marker is None or e.marker.query_id == e.checkpoint.query_id:
        return None
    return Ruling(
        Verdict.DIVERGED,
        f"the marker names query {e.marker.query_id}, the checkpoint is query {e.checkpoint.query_id or '(none)'}",
    )


def marker_beyond_next_batch(e: PartitionEvidence) -> Ruling | None:
    """DIVERGED when the marker names a batch past ``C+1``: the sink commits at most one batch ahead of Spark."""
    if e.marker is None or e.marker.batch_id <= e.checkpoint.next_batch:
        return None
    return Ruling(
        Verdict.DIVERGED,
        f"the marker names batch {e.marker.batch_id}, more than one batch after the last committed batch "
        f"{_batch_or_none(e.checkpoint.last_committed_batch)}",
    )


def marker_batch_unplanned(e: PartitionEvidence) -> Ruling | None:
    """DIVERGED when the checkpoint never planned the marker's batch: the sink only commits planned batches."""
    if e.marker is None or e.checkpoint.has_planned(e.marker.batch_id):
        return None
    return Ruling(
        Verdict.DIVERGED,
        f"the marker names batch {e.marker.batch_id} but the checkpoint has not planned it "
        f"(last planned batch {_batch_or_none(e.checkpoint.last_planned_batch)})",
    )


def partition_not_in_wal(e: PartitionEvidence) -> Ruling | None:
    """DIVERGED when ``offsets/M`` exists but does not list the partition: batch ``M`` never read it."""
    if e.marker is None or e.marker_batch_offsets is None or e.wal_offset is not None:
        return None
    batch = e.marker.batch_id
    return Ruling(Verdict.DIVERGED, f"the marker names batch {batch} but offsets/{batch} does not list this partition")


def group_offset_differs(e: PartitionEvidence) -> Ruling | None:
    """DIVERGED when the group offset differs from ``offsets/M``: the marker's batch did not commit it."""
    if e.marker is None or e.group_offset is None or e.wal_offset is None or e.group_offset.offset == e.wal_offset:
        return None
    batch = e.marker.batch_id
    return Ruling(
        Verdict.DIVERGED,
        f"the group's offset {e.group_offset.offset} differs from offsets/{batch} ({e.wal_offset}) "
        f"although the marker names batch {batch}",
        e.wal_offset,
    )


def next_batch_unreadable(e: PartitionEvidence) -> Ruling | None:
    """DIVERGED when the marker names ``C+1`` but ``offsets/C+1`` cannot be read: the offset cannot be checked."""
    if e.marker is None or e.marker.batch_id != e.checkpoint.next_batch or e.wal_offset is not None:
        return None
    batch = e.marker.batch_id
    return Ruling(Verdict.DIVERGED, f"the marker names the planned batch {batch} but offsets/{batch} could not be read")


def next_batch_in_kafka(e: PartitionEvidence) -> Ruling | None:
    """KAFKA_AHEAD_SAFE when the marker names ``C+1``: batch ``C+1`` is in Kafka, and its replay skips it."""
    if e.marker is None or e.marker.batch_id != e.checkpoint.next_batch:
        return None
    batch = e.marker.batch_id
    return Ruling(
        Verdict.KAFKA_AHEAD_SAFE, f"batch {batch} is in Kafka, commits/{batch} is missing: the replay skips it",
        e.wal_offset,
    )


def marker_at_last_commit(e: PartitionEvidence) -> Ruling | None:
    """IN_SYNC when the marker names ``C``: Kafka and the checkpoint agree."""
    if e.marker is None or e.marker.batch_id != e.checkpoint.last_committed_batch:
        return None
    return Ruling(Verdict.IN_SYNC, f"marker and offset match batch {e.marker.batch_id}", e.wal_offset)


def kafka_behind(e: PartitionEvidence) -> Ruling:
    """KAFKA_BEHIND when no other rule applies (the marker names ``M < C``): batches ``M+1..C`` are missing.

    The detail names the rewind target ``M`` and, when ``offsets/M`` was purged, that the
    offset could not be checked and a rewind to ``M`` will be refused.
    """
    marker_batch = -1 if e.marker is None else e.marker.batch_id  # the rules before leave a marker here
    last = e.checkpoint.last_committed_batch
    missing = f"{marker_batch + 1}..{last}" if last is not None and marker_batch + 1 < last else str(last)
    unchecked = (
        ""
        if e.wal_offset is not None
        else f"; offsets/{marker_batch} is no longer in the checkpoint, so the offset is unchecked and "
        f"a rewind to batch {marker_batch} will be refused"
    )
    return Ruling(
        Verdict.KAFKA_BEHIND,
        f"output of batch(es) {missing} is missing: rewind the checkpoint to batch {marker_batch}{unchecked}",
        e.wal_offset,
    )


#: The rules in the order they are tried; :func:`kafka_behind` decides when none applies.
PARTITION_RULES: tuple[PartitionRule, ...] = (
    nothing_left_after_expiry,
    nothing_committed_yet,
    partition_new_to_checkpoint,
    group_offset_missing,
    marker_unreadable,
    marker_missing,
    marker_of_other_query,
    marker_beyond_next_batch,
    marker_batch_unplanned,
    partition_not_in_wal,
    group_offset_differs,
    next_batch_unreadable,
    next_batch_in_kafka,
    marker_at_last_commit,
)


def deciding_rule(evidence: PartitionEvidence) -> tuple[PartitionRule, Ruling]:
    """The first rule of :data:`PARTITION_RULES` that applies (else :func:`kafka_behind`) and its ruling."""
    for rule in PARTITION_RULES:
        ruling = rule(evidence)
        if ruling is not None:
            return rule, ruling
    return kafka_behind, kafka_behind(evidence)


def classify_partition(evidence: PartitionEvidence) -> PartitionVerdict:
    """Apply :data:`PARTITION_RULES` to one partition; the first that applies decides."""
    _, ruling = deciding_rule(evidence)
    marker = evidence.marker
    return PartitionVerdict(
        tp=evidence.tp,
        verdict=ruling.verdict,
        checkpoint_batch=evidence.checkpoint.last_committed_batch,
        checkpoint_offset=evidence.checkpoint_offset,
        group_offset=None if evidence.group_offset is None else evidence.group_offset.offset,
        marker_batch=None if marker is None else marker.batch_id,
        marker_query_id=None if marker is None else marker.query_id,
        wal_offset=ruling.wal_offset,
        detail=ruling.detail,
    )
