"""The sink's per-batch decision (docs/architecture.md, the protocol), free of any Kafka client.

Before producing batch ``N`` the sink compares the sink group's committed offsets (and their
batch markers) with the batch's planned range from the checkpoint. Exactly one of three things
is true, because each batch's transaction commits the end offsets of *every* input partition
with marker ``N`` atomically:

- every partition is at ``end`` with marker ``N``: the batch is already in Kafka and Spark is
  replaying it -> :attr:`BatchAction.SKIP_REPLAY`;
- every partition is at ``start`` with marker ``N-1`` (or, on the query's first batch, nothing is
  committed) -> :attr:`BatchAction.PRODUCE`; "nothing committed" counts only while no offset an
  earlier attempt of ``N`` committed can have expired (:mod:`.offsets_expiry`), else
  :class:`ExpiredOffsetsError`;
- anything else, including a mix of the two -> :class:`InconsistentOffsetsError`. The sink never
  repairs this silently: producing would duplicate or lose output.

Each partition's state is decided by four named rules over the :class:`PlannedBatch`
(:func:`nothing_committed_before`, :func:`nothing_committed_may_have_expired`,
:func:`committed_by_this_batch`, :func:`committed_by_previous_batch`); a partition none of them
recognises is inconsistent.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from airflow_provider_eos.core.errors import InconsistentOffsetsError, MarkerError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset, CommittedOffsets
from airflow_provider_eos.core.offsets_expiry import OffsetsExpiry, expired_offsets_error
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition


class BatchAction(enum.Enum):
    """What the sink does with a micro-batch."""

    #: Produce the batch's output and commit ``end`` with marker ``N`` in one transaction.
    PRODUCE = "produce"
    #: The batch's transaction already committed; Spark is replaying it. Produce nothing.
    SKIP_REPLAY = "skip_replay"


class _State(enum.Enum):
    """Where one partition's committed offset stands relative to batch ``N``."""

    AT_END = "committed by this batch"
    AT_START = "committed by the previous batch"
    #: Nothing committed where that is the state before ``N``, but an earlier attempt's commit may have expired.
    MAYBE_EXPIRED = "nothing committed, possibly expired"
    INCONSISTENT = "inconsistent"


@dataclass(frozen=True)
class PlannedBatch:
    """Batch ``N`` as the checkpoint planned it: what every partition's group offset is compared with.

    :param query_id: the query id from the checkpoint's ``metadata`` file.
    :param batch_id: the micro-batch id ``N``.
    :param start: the batch's start offsets (``offsets/N-1``, or the initial offsets for the query's
        first batch). Partitions absent here are new in this batch.
    :param end: the batch's end offsets (``offsets/N``).
    :param is_first_batch: whether ``N`` is the query's first batch (nothing committed before it).
    :param expiry: whether offsets an earlier attempt of ``N`` committed may have expired by now, for the
        partitions whose state before ``N`` is "nothing committed" (:attr:`accepts_nothing_committed`);
        ``None``: they cannot have (a writer judges it whenever :attr:`accepts_nothing_committed`).
    """

    query_id: str
    batch_id: int
    start: OffsetMap
    end: OffsetMap
    is_first_batch: bool
    expiry: OffsetsExpiry | None = None

    @classmethod
    def of(
        cls, *, query_id: str, batch_id: int, start: OffsetMap, end: OffsetMap, is_first_batch: bool | None = None,
        expiry: OffsetsExpiry | None = None,
    ) -> PlannedBatch:
        """The batch, its first-batch flag defaulting to ``batch_id == 0``."""
        first = batch_id == 0 if is_first_batch is None else is_first_batch
        return cls(query_id, batch_id, start, end, first, expiry)

    @property
    def accepts_nothing_committed(self) -> bool:
        """Whether some partition's state before ``N`` is "nothing committed": the query's first batch, or a
        partition new in it. Only then does an expiry matter, so only then must a writer judge :attr:`expiry`."""
        return self.is_first_batch or any(self.is_new(tp) for tp in self.end)

    def absence_may_have_expired(self) -> bool:
        """Whether a group that holds nothing for a partition may have lost an earlier attempt's commit."""
        return self.expiry is not None and self.expiry.may_have_expired

    def is_new(self, tp: TopicPartition) -> bool:
        """Whether ``tp`` was added between batches: Spark reads it from its earliest offset, which the
        checkpoint does not record, so the only consistent "before" state is "nothing committed"."""
        return tp not in self.start

    def own_marker(self, committed: CommittedOffset) -> BatchMarker | None:
        """The group offset's batch marker if it is one of this query's (``None``: none, unreadable or foreign)."""
        try:
            marker = committed.marker
        except MarkerError:
            return None
        return marker if marker is not None and marker.query_id == self.query_id else None

    def expected(self, tp: TopicPartition) -> str:
        """The two states :func:`_classify` accepts for ``tp``, for the error that lists what was found instead."""
        end_marker = BatchMarker(self.query_id, self.batch_id).encode()
        replay = f"offset {self.end[tp]} with marker {end_marker} (batch {self.batch_id} already committed)"
        if self.is_new(tp):
            before = "nothing committed (partition new in this batch)"
        elif self.is_first_batch:
            before = f"nothing committed (first batch of query {self.query_id})"
        else:
            prev_marker = BatchMarker(self.query_id, self.batch_id - 1).encode()
            before = f"offset {self.start[tp]} with marker {prev_marker}"
        return f"{before}, or {replay}"


# The rules of one partition's state, one predicate each; a partition none of them matches is inconsistent.


def _nothing_where_nothing_is_expected(batch: PlannedBatch, tp: TopicPartition,
                                       committed: CommittedOffset | None) -> bool:
    return committed is None and (batch.is_new(tp) or batch.is_first_batch)


def nothing_committed_before(batch: PlannedBatch, tp: TopicPartition, committed: CommittedOffset | None) -> bool:
    """The group holds nothing, the state before batch ``N`` when it is the query's first or ``tp`` is new in it,
    and no offset an earlier attempt of ``N`` committed can have expired: the absence proves nothing was."""
    return _nothing_where_nothing_is_expected(batch, tp, committed) and not batch.absence_may_have_expired()


def nothing_committed_may_have_expired(batch: PlannedBatch, tp: TopicPartition,
                                       committed: CommittedOffset | None) -> bool:
    """As :func:`nothing_committed_before`, but the batch was planned at least ``offsets.retention.minutes`` ago:
    an earlier attempt may have committed, and the broker deleted its offsets since (note 55)."""
    return _nothing_where_nothing_is_expected(batch, tp, committed) and batch.absence_may_have_expired()


def committed_by_this_batch(batch: PlannedBatch, tp: TopicPartition, committed: CommittedOffset | None) -> bool:
    """The group offset is ``end`` with marker ``N``: batch ``N``'s transaction committed, Spark replays it."""
    if committed is None:
        return False
    marker = batch.own_marker(committed)
    return marker is not None and marker.batch_id == batch.batch_id and committed.offset == batch.end[tp]


def committed_by_previous_batch(batch: PlannedBatch, tp: TopicPartition, committed: CommittedOffset | None) -> bool:
    """The group offset is ``start`` with marker ``N-1``: batch ``N-1`` committed, batch ``N`` did not yet."""
    if committed is None:
        return False
    marker = batch.own_marker(committed)
    return (
        marker is not None
        and batch.batch_id > 0
        and marker.batch_id == batch.batch_id - 1
        and not batch.is_new(tp)
        and committed.offset == batch.start[tp]
    )


#: Each partition state with the rule that recognises it; the four exclude each other, so order does not matter.
_STATE_RULES: tuple[tuple[Callable[[PlannedBatch, TopicPartition, CommittedOffset | None], bool], _State], ...] = (
    (nothing_committed_before, _State.AT_START),
    (nothing_committed_may_have_expired, _State.MAYBE_EXPIRED),
    (committed_by_this_batch, _State.AT_END),
    (committed_by_previous_batch, _State.AT_START),
)


@dataclass(frozen=True)
class _Finding:
    tp: TopicPartition
    state: _State
    expected: str
    found: str


def _describe(committed: CommittedOffset | None) -> str:
    return "nothing committed" if committed is None else committed.describe()


def _classify(batch: PlannedBatch, tp: TopicPartition, committed: CommittedOffset | None) -> _Finding:
    """The state of one partition by :data:`_STATE_RULES`, with the expected and found values for an error."""
    state = next((state for rule, state in _STATE_RULES if rule(batch, tp, committed)), _State.INCONSISTENT)
    found = _describe(committed)
    if state is _State.MAYBE_EXPIRED and batch.expiry is not None:
        found = f"{found}, but {batch.expiry.describe()}"
    return _Finding(tp, state, batch.expected(tp), found)


def _fix(group_id: str) -> str:
    return (
        "Nothing was produced. Run `eos verify --spec <spec file>` (Airflow: "
        "VerifyCommittedOffsetsOperator) to see the verdict, then repair with `eos repair --spec "
        f"<spec file>` (rewind the checkpoint, or align group {group_id!r} to it). Do not move the "
        "group's offsets by hand and do not delete the checkpoint: either duplicates or loses output."
    )


def _expired(batch: PlannedBatch, partitions: list[TopicPartition], group_id: str) -> InconsistentOffsetsError:
    assert batch.expiry is not None  # MAYBE_EXPIRED is found only with an expiry
    return expired_offsets_error(batch.expiry, partitions, query_id=batch.query_id, group_id=group_id,
                                 start=batch.start, end=batch.end)


def decide_batch(batch: PlannedBatch, committed: CommittedOffsets, group_id: str) -> BatchAction:
    """Decide whether the sink produces batch ``N`` or skips it as a replay.

    :param batch: batch ``N`` as the checkpoint planned it; every partition of its end offsets is checked.
    :param committed: the sink group's committed offsets for the input partitions (read with
        ``require_stable``); a missing key or ``None`` means nothing is committed.
    :param group_id: the sink group, named in the error.
    :returns: :attr:`BatchAction.PRODUCE` or :attr:`BatchAction.SKIP_REPLAY`.
    :raises ExpiredOffsetsError: the only partitions that fit neither case hold nothing where that is the
        state before ``N``, but an earlier attempt's commit may have expired (:attr:`PlannedBatch.expiry`).
    :raises InconsistentOffsetsError: listing every partition whose committed offset or marker
        fits neither case, with expected and found values, or naming the mix of both cases.
    """
    query_id, batch_id = batch.query_id, batch.batch_id
    if not batch.end:
        raise InconsistentOffsetsError(
            f"batch {batch_id} of query {query_id} has no input partitions in its end offsets, "
            f"so group {group_id!r} cannot be checked",
            fix="check that the checkpoint's offsets file for this batch holds the Kafka source's "
            "offsets (run `eos verify --spec <spec file>`)",
        )
    findings = [_classify(batch, tp, committed.get(tp)) for tp in sorted(batch.end)]
    states = {f.state for f in findings}
    if states == {_State.AT_END}:
        return BatchAction.SKIP_REPLAY
    if states == {_State.AT_START}:
        return BatchAction.PRODUCE

    expired = [f.tp for f in findings if f.state is _State.MAYBE_EXPIRED]
    if expired and _State.INCONSISTENT not in states:
        raise _expired(batch, expired, group_id)
    bad = [f for f in findings if f.state in (_State.INCONSISTENT, _State.MAYBE_EXPIRED)]
    header = f"sink group {group_id!r} disagrees with the checkpoint for batch {batch_id} of query {query_id}"
    if bad:
        lines = [f"  {f.tp}: expected {f.expected}; found {f.found}" for f in bad]
        message = f"{header}; {len(bad)} of {len(findings)} partition(s) inconsistent:\n" + "\n".join(lines)
    else:
        # Every partition is individually plausible, but a transaction commits all partitions
        # with the same marker atomically, so this sink cannot have left them split.
        at_end = ", ".join(f"{f.tp} ({f.found})" for f in findings if f.state is _State.AT_END)
        at_start = ", ".join(f"{f.tp} ({f.found})" for f in findings if f.state is _State.AT_START)
        message = (
            f"{header}: partitions are split between batch {batch_id} and the state before it, "
            "which one transaction cannot produce (it commits every partition atomically). "
            f"At batch {batch_id}: {at_end}. Before it: {at_start}"
        )
    raise InconsistentOffsetsError(message, fix=_fix(group_id))


def decide_partition(
    tp: TopicPartition, batch: PlannedBatch, committed: CommittedOffset | None, group_id: str
) -> BatchAction:
    """The executor writers' decision for one input partition (docs/architecture.md): write it or skip it as a replay.

    Each partition commits in its own transaction, so partitions of one batch may stand on both
    sides of it after a crash; each decides alone, by the same rule as :func:`decide_batch`.

    :param tp: the input partition; it must be in the batch's end offsets.
    :param batch: batch ``N`` as the checkpoint planned it.
    :param committed: the sink group's committed offset for ``tp`` (``None``: nothing committed).
    :param group_id: the sink group, named in the error.
    :raises ExpiredOffsetsError: the group holds nothing for ``tp`` where that is the state before ``N``, but
        an earlier attempt's commit may have expired (:attr:`PlannedBatch.expiry`).
    :raises InconsistentOffsetsError: naming the partition, the expected and the found offsets.
    """
    finding = _classify(batch, tp, committed)
    if finding.state is _State.AT_END:
        return BatchAction.SKIP_REPLAY
    if finding.state is _State.AT_START:
        return BatchAction.PRODUCE
    if finding.state is _State.MAYBE_EXPIRED:
        raise _expired(batch, [tp], group_id)
    raise InconsistentOffsetsError(
        f"sink group {group_id!r} disagrees with the checkpoint for {tp} in batch {batch.batch_id} of query "
        f"{batch.query_id}: "
        f"expected {finding.expected}; found {finding.found}",
        fix=_fix(group_id),
    )


@dataclass(frozen=True)
class PartitionExpectation:
    """The committed states of one input partition that :func:`decide_partition` accepts, as exact values.

    For a writer that compares instead of deciding (the JVM executor writer, docs/design-notes.md
    note 32): it gets these values, matches what it reads against them with :meth:`decide` (the
    same comparison in Java), and on no match fails with what it found, which the driver hands to
    :func:`decide_partition` for the error. Built by :func:`partition_expectation` from
    :func:`_classify`'s rules; ``tests/unit/test_partition_expectation.py`` checks the two agree.

    :param skip_at: the offset with marker ``N``: batch ``N`` already committed this partition.
    :param produce_at: the start offset with marker ``N-1`` (``None`` when batch ``N`` has no previous
        batch for this partition).
    :param produce_when_nothing_committed: "nothing committed" is the state before batch ``N`` (the
        query's first batch, or a partition new in this batch) and no earlier attempt's commit can have
        expired; otherwise the writer fails with what it found and :func:`decide_partition` names the expiry.
    """

    tp: TopicPartition
    skip_at: CommittedOffset
    produce_at: CommittedOffset | None
    produce_when_nothing_committed: bool

    def decide(self, committed: CommittedOffset | None) -> BatchAction | None:
        """What a writer comparing exact values decides; ``None``: inconsistent (no state matches)."""
        if committed is None:
            return BatchAction.PRODUCE if self.produce_when_nothing_committed else None
        if committed == self.skip_at:
            return BatchAction.SKIP_REPLAY
        if committed == self.produce_at:
            return BatchAction.PRODUCE
        return None


def partition_expectation(  # noqa: PLR0913  # the batch's fields, by name as the JVM plan's
    tp: TopicPartition,
    *,
    query_id: str,
    batch_id: int,
    start: OffsetMap,
    end: OffsetMap,
    is_first_batch: bool | None = None,
    expiry: OffsetsExpiry | None = None,
) -> PartitionExpectation:
    """The exact states :func:`_classify` calls "committed by this batch" and "by the previous batch".

    A marker decodes to ``(query_id, n)`` exactly when its text is ``BatchMarker(query_id, n).encode()``
    (the format admits one spelling of each), so comparing metadata strings decides as
    :func:`_classify` does.

    :raises MarkerError: if the query id or batch id cannot form a marker.
    """
    batch = PlannedBatch.of(query_id=query_id, batch_id=batch_id, start=start, end=end, is_first_batch=is_first_batch,
                            expiry=expiry)
    skip_at = CommittedOffset(end[tp], BatchMarker(query_id, batch_id).encode())
    produce_at = None
    if batch_id > 0 and tp in start:
        produce_at = CommittedOffset(start[tp], BatchMarker(query_id, batch_id - 1).encode())
    return PartitionExpectation(tp, skip_at, produce_at, nothing_committed_before(batch, tp, None))


def task_committed_in_this_run(action: str, attempt: int) -> bool:
    """Whether an executor writer task's report stands for a transaction of this run that committed its partition.

    A task that produced committed it. So did an earlier attempt of a retry (Spark's attempt 1 or
    later) that found the partition at marker ``N`` and skipped: in one run nothing but this batch's
    tasks writes marker ``N``, and an attempt that commits and dies before its report reaches the
    driver leaves exactly that. Only a restarted query's first batch, a replay whose partition was
    committed before the run, can also show it, if the earlier attempt died while skipping; that is
    counted as a commit too (rarer than the loss of a committing attempt's report, and nothing tells
    the two apart in the report).

    :param action: the report's ``action``: ``produce`` or ``skip_replay``.
    :param attempt: the report's ``attempt``: Spark's attempt number of the task that reported.
    """
    if action == BatchAction.PRODUCE.value:
        return True
    return action == BatchAction.SKIP_REPLAY.value and attempt > 0


def executor_batch_action(tasks_committed: int, driver_committed: int) -> BatchAction:
    """The executor writers' action for a batch: produced if this run committed any partition of it.

    :param tasks_committed: the tasks whose report says this run committed their partition
        (:func:`task_committed_in_this_run`).
    :param driver_committed: the partitions without a task the driver committed.
    """
    return BatchAction.PRODUCE if tasks_committed or driver_committed else BatchAction.SKIP_REPLAY


def offsets_to_commit(query_id: str, batch_id: int, end: OffsetMap) -> dict[TopicPartition, tuple[int, str]]:
    """The offsets the sink commits in batch ``N``'s transaction: ``end`` with marker ``N``.

    :param query_id: the query id from the checkpoint's ``metadata`` file.
    :param batch_id: the micro-batch id ``N``.
    :param end: the batch's end offsets (``offsets/N``), next offset to read per partition.
    :returns: ``{partition: (offset, marker)}`` for every partition in ``end``.
    :raises MarkerError: if the query id or batch id cannot form a marker.
    """
    marker = BatchMarker(query_id, batch_id).encode()
    return {tp: (offset, marker) for tp, offset in sorted(end.items())}
