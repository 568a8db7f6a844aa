"""Verify a sink group against a checkpoint: every partition's verdict, then the group as a whole.

:func:`verify` checks that the checkpoint's batch numbers agree with each other, classifies
every partition of ``offsets/C`` and of the group (:mod:`.partition_rules`), and takes the
worst row as the overall verdict, with one decision beyond the per-partition table:

**Markers must agree, as far as the writer allows** (:mod:`.writers` settles which writer).
The driver writer commits every input partition in one transaction with one marker, so
partitions of ``Q`` carrying markers of different batches cannot come from it: the overall
verdict is then ``DIVERGED`` even when each row alone looks repairable, because a rewind can
satisfy at most one of the markers. The executor writers commit each input partition in a
transaction of its own, so a crash in the middle of batch ``C+1`` leaves some partitions at
``C+1`` (``KAFKA_AHEAD_SAFE``) and the rest at ``C`` (``IN_SYNC``): that one mix is consistent
(the replay of ``C+1`` skips the committed partitions and writes the rest) and the overall
verdict is the worst row's. Any other mix is ``DIVERGED`` for both writers: the executor
writers' batch ``C`` ended only after every partition had committed it.

**A partition without a marker stands only beside partitions at ``C``.** ``NO_MARKER``'s repair,
align, commits ``offsets/C`` with marker ``C`` to every partition: beside a partition at another
batch (``KAFKA_BEHIND``, ``KAFKA_AHEAD_SAFE``) it would lose or duplicate that partition's output,
and neither a rewind nor the replay can reconcile a partition the sink refuses (it holds no
marker) with the others, so the overall verdict is ``DIVERGED``. **The driver writer's batch
``C+1`` commits every partition of ``offsets/C+1``**: beside its marker, a partition of
``offsets/C+1`` where the group holds nothing (one new since ``offsets/C``, which the rules of one
row call "nothing to verify") cannot come from it, and the sink's replay refuses the split, so that
is ``DIVERGED`` too; the executor writers' tasks commit such a partition on their own, and the
replay writes it.

:func:`verify_checkpoint` is the same over a :class:`CheckpointReader`, reading only the
``offsets/N`` files a verdict needs, so the shell need not read every ``offsets/N``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.core.markers import CommittedOffsets
from airflow_provider_eos.core.offsets_expiry import OffsetsExpiry, RetentionReading
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition
from airflow_provider_eos.core.verification.partition_evidence import (
    CheckpointSide,
    Markers,
    OffsetsSource,
    PartitionEvidence,
    Wal,
)
from airflow_provider_eos.core.verification.partition_rules import (
    classify_partition,
    deciding_rule,
    nothing_left_after_expiry,
)
from airflow_provider_eos.core.verification.report import VerificationReport
from airflow_provider_eos.core.verification.verdict import PartitionVerdict, Verdict
from airflow_provider_eos.core.verification.writers import WritersInUse, WritersSource, writers_in_use
from airflow_provider_eos.core.writers_choice import read_writers_choice

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.core.spec import Writers

#: Judged by when the caller does not say: the driver writer's (stricter) rules.
_DRIVER_RULES = writers_in_use(None, None)

__all__ = ["verify", "verify_checkpoint"]


def verify(  # noqa: PLR0913  # each fact of the two sides by name
    *,
    query_id: str | None,
    last_committed: int | None,
    last_planned: int | None,
    planned_offsets: OffsetsSource,
    committed: CommittedOffsets,
    writers: WritersInUse = _DRIVER_RULES,
    expiry: OffsetsExpiry | None = None,
) -> VerificationReport:
    """Compare the sink group's committed offsets and markers with the checkpoint.

    :param query_id: the checkpoint's query id ``Q``; ``None`` if the checkpoint has no
        ``metadata`` yet (then every marker is foreign).
    :param last_committed: the last batch with a ``commits/N`` file (``None``: none).
    :param last_planned: the last batch with an ``offsets/N`` file (``None``: none).
    :param planned_offsets: ``offsets/N`` of the (single) Kafka source per batch; a mapping
        must hold at least ``last_committed`` and ``last_planned``, and the marker batches to
        check offsets against them; a callable is asked lazily, once per batch, and returns
        ``None`` for a batch the checkpoint does not have (e.g. purged).
    :param committed: the group's committed offsets for the input partitions; ``None`` (or
        absence) means the group has nothing for that partition.
    :param writers: the writer whose rules apply (:func:`~.writers.writers_in_use`); default the
        driver writer's.
    :param expiry: whether offsets the planned, uncommitted batch ``C+1`` committed may have expired
        (``None``: not judged); then a group holding nothing for it is ``NO_MARKER``, not "nothing to verify".
    :return: the report; rows cover the partitions of ``offsets/C`` plus every partition in
        ``committed``.
    :raises CheckpointError: if the batch numbers contradict each other (commits without
        ``offsets/C``, last planned before last committed).
    """
    checkpoint = CheckpointSide(query_id, last_committed, last_planned, Wal(planned_offsets), expiry)
    checkpoint_offsets = _last_committed_offsets(checkpoint)
    markers = Markers()
    evidence = [PartitionEvidence(tp, checkpoint, checkpoint_offsets.get(tp), committed.get(tp), markers)
                for tp in sorted(set(checkpoint_offsets) | set(committed))]
    rows = tuple(classify_partition(e) for e in evidence)
    expired = expiry.batch_id if any(deciding_rule(e)[0] is nothing_left_after_expiry for e in evidence) else None

    overall = max((row.verdict for row in rows), key=lambda v: v.severity, default=Verdict.IN_SYNC)
    issues: tuple[str, ...] = ()
    marker_batches = _own_marker_batches(rows, query_id)
    interrupted = _interrupted_batch(marker_batches, last_committed)
    if interrupted is not None and writers.executors:
        rows = tuple(_awaiting_replay(row, interrupted - 1) for row in rows)
    elif len(marker_batches) > 1:
        issues = (_mixed_markers_issue(marker_batches, writers, mid_batch=interrupted is not None),)
        overall = Verdict.DIVERGED
    beside = _no_marker_beside_other_batches(rows, marker_batches, last_committed) or (
        None if writers.executors else _next_batch_left_out(rows, marker_batches, checkpoint)
    )
    if beside is not None:
        issues, overall = (*issues, beside), Verdict.DIVERGED
    return VerificationReport(
        query_id=query_id,
        last_committed=last_committed,
        last_planned=last_planned,
        rows=rows,
        overall=overall,
        issues=issues,
        writers=writers,
        expired_batch=expired,
    )


def _last_committed_offsets(checkpoint: CheckpointSide) -> OffsetMap:
    """``offsets/C``, every partition's checkpoint offset (``{}`` before the first commit).

    :raises CheckpointError: if the checkpoint contradicts itself: ``commits/C`` without a planned
        ``offsets/C``, or an ``offsets/C`` that cannot be read.
    """
    last = checkpoint.last_committed_batch
    if last is None:
        return {}
    if not checkpoint.has_planned(last):
        raise CheckpointError(
            f"the checkpoint's last committed batch is {last} but its last planned batch "
            f"is {checkpoint.last_planned_batch}: commits/{last} has no offsets/{last}",
            fix="the checkpoint is damaged or was edited by hand; restore it from a backup",
        )
    found = checkpoint.wal(last)
    if found is None:
        raise CheckpointError(
            f"commits/{last} exists but offsets/{last} could not be read, so batch {last}'s offsets are unknown",
            fix=f"restore offsets/{last} from a backup of the checkpoint",
        )
    return found


def _own_marker_batches(rows: tuple[PartitionVerdict, ...], query_id: str | None) -> list[int]:
    """The distinct batches the markers of the checkpoint's own query name, in order (foreign markers excluded)."""
    return sorted(
        {row.marker_batch for row in rows if row.marker_batch is not None and row.marker_query_id == query_id}
    )


def _interrupted_batch(marker_batches: list[int], last_committed: int | None) -> int | None:
    """``C+1`` when the markers name exactly ``C`` and ``C+1``: what a crash in the middle of batch ``C+1`` leaves
    when each input partition commits on its own (the executor writers); else ``None``."""
    if last_committed is None or marker_batches != [last_committed, last_committed + 1]:
        return None
    return last_committed + 1


def _awaiting_replay(row: PartitionVerdict, c: int) -> PartitionVerdict:
    """An executor writer's partition still at ``C`` while others hold ``C+1``: say what the replay does to it."""
    if row.verdict is not Verdict.IN_SYNC or row.marker_batch != c:
        return row
    return row.model_copy(
        update={"detail": f"{row.detail}; batch {c + 1} is not in Kafka for this partition yet: the replay writes it"}
    )


def _no_marker_beside_other_batches(
    rows: tuple[PartitionVerdict, ...], marker_batches: list[int], c: int | None
) -> str | None:
    """The issue when ``NO_MARKER`` partitions stand beside markers of a batch other than ``C``; else ``None``."""
    unmarked = [row.tp for row in rows if row.verdict is Verdict.NO_MARKER]
    others = [batch for batch in marker_batches if batch != c]
    if not unmarked or not others:
        return None
    return (
        f"{_partitions(unmarked)} hold no batch marker while other partitions carry batch "
        f"{', '.join(map(str, others))} (the checkpoint's last committed batch: {'none' if c is None else c}): "
        "aligning the group to the checkpoint would lose or duplicate those partitions' output, and the sink "
        "refuses a partition without a marker, so neither a rewind nor the replay reconciles them"
    )


def _next_batch_left_out(
    rows: tuple[PartitionVerdict, ...], marker_batches: list[int], checkpoint: CheckpointSide
) -> str | None:
    """The driver writer's issue when batch ``C+1``'s marker stands beside a partition of ``offsets/C+1`` that
    the group holds nothing for; else ``None``."""
    c = checkpoint.last_committed_batch
    following = 0 if c is None else c + 1
    if marker_batches != [following]:
        return None
    planned = checkpoint.wal(following) or {}
    left_out = [row.tp for row in rows if row.group_offset is None and row.tp in planned]
    if not left_out:
        return None
    return (
        f"batch {following} is committed in the group for some partitions but {_partitions(left_out)}, which "
        f"offsets/{following} lists, hold nothing, although the driver writer commits every partition of a batch "
        "in one transaction: something other than the sink committed or deleted offsets, and the sink's replay of "
        f"batch {following} refuses the split"
    )


def _partitions(tps: list[TopicPartition]) -> str:
    shown = ", ".join(str(tp) for tp in tps[:5])
    return f"partition(s) {shown}" + (f" and {len(tps) - 5} more" if len(tps) > 5 else "")


def _mixed_markers_issue(marker_batches: list[int], writers: WritersInUse, *, mid_batch: bool) -> str:
    listed = ", ".join(map(str, marker_batches))
    if writers.executors:
        return (
            f"partitions carry markers of batches {listed}; executor writers leave at most two adjacent batches "
            "(the last committed and the one in flight) side by side: something other than the sink committed, "
            "or the group was partly reset"
        )
    issue = (
        f"partitions carry markers of different batches ({listed}) although the sink commits every partition "
        f"with one marker per transaction (writers: {writers.summary}): something other than the sink "
        "committed, or the group was partly reset"
    )
    if mid_batch and writers.source is WritersSource.DEFAULT:
        issue += (
            "; executor writers leave such a mix after a crash mid-batch: if the job used them, its record "
            "eos/writers.json is missing from the checkpoint, and `writers: executors` in the spec makes "
            "verification judge by their rules"
        )
    return issue


def verify_checkpoint(
    reader: CheckpointReader, committed: CommittedOffsets, *, spec_writers: Writers | None = None,
    retention: RetentionReading | None = None,
) -> VerificationReport:
    """Verify the sink group's offsets against a checkpoint, reading the WAL lazily.

    Only the batches a verdict needs (``C`` and the marker batches) are read from
    ``offsets/``; a batch the checkpoint no longer has is reported, not raised. The writer is
    the checkpoint's recorded choice, else ``spec_writers`` when explicit, else the driver's
    rules (:func:`~.writers.writers_in_use`).

    :param reader: the checkpoint to verify against.
    :param committed: the group's committed offsets for the input partitions.
    :param spec_writers: the spec's ``writers`` (``None``: no spec at hand).
    :param retention: the brokers' ``offsets.retention.minutes``, to judge whether the offsets of a planned,
        uncommitted batch may have expired (``None``: not judged).
    :return: the verification report.
    :raises CheckpointError: if a needed checkpoint file (the writers record included) is malformed.
    """
    retained = set(reader.offset_batches())

    def offsets_for(batch: int) -> OffsetMap | None:
        return reader.planned_offsets(batch) if batch in retained else None

    last_committed, last_planned = reader.latest_committed_batch(), reader.latest_planned_batch()
    in_flight = 0 if last_committed is None else last_committed + 1
    expiry = None
    if retention is not None and last_planned == in_flight and in_flight in retained:
        expiry = retention.expiry_of(in_flight, reader.batch_metadata(in_flight))
    return verify(
        query_id=reader.query_id_if_known(),
        last_committed=last_committed,
        last_planned=last_planned,
        planned_offsets=offsets_for,
        committed=committed,
        writers=writers_in_use(read_writers_choice(reader), spec_writers),
        expiry=expiry,
    )
