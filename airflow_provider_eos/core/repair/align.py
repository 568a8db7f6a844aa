"""Aligning the sink group to the checkpoint: commit ``offsets/C`` with marker ``C``.

The repair for ``NO_MARKER`` (docs/architecture.md, recovery). It refuses on ``KAFKA_BEHIND`` (would lose
output), ``KAFKA_AHEAD_SAFE`` (would duplicate the replay) and ``DIVERGED`` unless forced. When the
batch in flight ``C+1``'s offsets may have expired, it refuses until told whether that batch is in the
output topic, even when forced, and then commits ``offsets/C`` (not written) or ``offsets/C+1`` with
marker ``C+1`` (written; :mod:`.align_in_flight`, docs/design-notes.md note 61). The plan holds every
offset and metadata it replaces, so the group can be put back; committing it needs Kafka and is the
shell's job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import computed_field

from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.in_flight_batch import InFlightBatch, parse_in_flight
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffsets
from airflow_provider_eos.core.repair.align_in_flight import expired_batch_target, unexpected_answer
from airflow_provider_eos.core.repair.fingerprint import plan_fingerprint
from airflow_provider_eos.core.topic_partition import PartitionObject, PartitionRow, TopicPartition
from airflow_provider_eos.core.verification import Verdict, VerificationReport, verify_checkpoint

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.core.offsets_expiry import RetentionReading
    from airflow_provider_eos.core.spec import Writers

__all__ = ["AlignPlan", "AlignRow", "plan_align"]


class AlignRow(PartitionRow):
    """One partition of an align plan: the group's offset before and the target after.

    JSON: ``topic``, ``partition`` (see :class:`~airflow_provider_eos.core.topic_partition.PartitionRow`),
    the four offsets and metadata, and ``changed``.

    :param tp: the input partition.
    :param before_offset: the group's committed offset now (``None``: nothing committed).
    :param before_metadata: its metadata now (``None``: nothing committed).
    :param after_offset: ``offsets/B`` for this partition (``B``: the plan's ``batch_id``).
    :param after_metadata: the marker of batch ``B`` of the checkpoint's query.
    """

    before_offset: int | None
    before_metadata: str | None
    after_offset: int
    after_metadata: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def changed(self) -> bool:
        """True when committing the target changes the group."""
        return (self.before_offset, self.before_metadata) != (self.after_offset, self.after_metadata)


class AlignPlan(FrozenModel):
    """Commit the checkpoint's ``offsets/C`` with marker ``C`` to the sink group (``offsets/C+1`` with marker
    ``C+1`` when told the batch in flight, whose offsets may have expired, was written).

    The plan holds every offset and metadata it replaces (``before_*``), so the group can be
    put back. Committing needs Kafka and is the shell's job: it commits
    :meth:`offsets_with_metadata` unless :attr:`is_noop`.

    JSON: ``repair`` (``"align"``), the fields below, ``is_noop``, ``changes`` (how many rows
    change) and ``fingerprint``.

    :param query_id: the checkpoint's query id.
    :param batch_id: the batch whose offsets and marker are committed: the last committed batch ``C``, or the
        batch in flight when told it was written.
    :param rows: one row per partition of ``offsets/<batch_id>``.
    :param untouched: partitions the group has but ``offsets/<batch_id>`` does not; left as they are.
    :param verdict: the verification verdict the plan was made under.
    :param warnings: things the operator should read before committing.
    :param expired_batch: the batch in flight whose offsets may have expired (``None``: none), which the plan
        needed ``in_flight_batch`` for.
    :param in_flight_batch: what the person said the output topic shows of it.
    """

    query_id: str
    batch_id: int
    rows: tuple[AlignRow, ...]
    untouched: tuple[PartitionObject, ...]
    verdict: Verdict
    warnings: tuple[str, ...] = ()
    expired_batch: int | None = None
    in_flight_batch: InFlightBatch | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def repair(self) -> Literal["align"]:
        """Which repair this is, for readers of the JSON."""
        return "align"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fingerprint(self) -> str:
        """What the dry run shows and an execution may be held to (:mod:`.fingerprint`)."""
        return plan_fingerprint(self)

    @property
    def changes(self) -> tuple[AlignRow, ...]:
        """The rows whose committed offset or metadata would change."""
        return tuple(row for row in self.rows if row.changed)

    @computed_field(alias="changes")  # type: ignore[prop-decorator]
    @property
    def change_count(self) -> int:
        """How many partitions change (``changes`` in JSON)."""
        return len(self.changes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def is_noop(self) -> bool:
        """True when the group already holds the target for every partition."""
        return not self.changes

    def offsets_with_metadata(self) -> dict[TopicPartition, tuple[int, str]]:
        """The complete target, every partition of ``offsets/C``: ``{tp: (offset, metadata)}``.

        All partitions, not only the changed ones, so one commit leaves the group exactly at
        the target; committing an unchanged partition again is harmless.
        """
        return {row.tp: (row.after_offset, row.after_metadata) for row in self.rows}


_ALIGN_CONSEQUENCE = {
    Verdict.KAFKA_AHEAD_SAFE: "batch {a} is already in Kafka; aligning to batch {c} makes the replay "
    "produce batch {a} a second time (duplicates)",
    Verdict.KAFKA_BEHIND: "the output of the batches after the group's marker is missing; aligning "
    "declares it produced and it is lost. Rewind the checkpoint instead",
    Verdict.DIVERGED: "the group disagrees with the checkpoint in a way no repair explains; aligning "
    "overwrites that evidence and output may be missing or duplicated",
}


# Executor writers stopped mid-batch: the replay completes the batch on its own.
_PARTIAL_BATCH_CONSEQUENCE = (
    "batch {a} is already in Kafka on some partitions (executor writers stopped in the middle of it) and the "
    "replay completes it; aligning them back to batch {c} makes the replay produce their part of batch {a} a "
    "second time (duplicates)"
)


def plan_align(
    reader: CheckpointReader,
    committed: CommittedOffsets,
    *,
    force: bool = False,
    spec_writers: Writers | None = None,
    retention: RetentionReading | None = None,
    in_flight_batch: InFlightBatch | str | None = None,
) -> AlignPlan:
    """Plan aligning the sink group to the checkpoint: ``offsets/C`` with marker ``C``.

    This is the repair for ``NO_MARKER`` (the sink never committed for this checkpoint). On
    ``IN_SYNC`` the plan is a no-op. For other verdicts aligning loses or duplicates output,
    so it is refused unless ``force`` is set (the plan then carries a warning). When the batch in
    flight's offsets may have expired (judged with ``retention``), the plan follows ``in_flight_batch``
    and is refused without it, ``force`` or not (:func:`~.align_in_flight.expired_batch_target`).

    :param reader: the checkpoint.
    :param committed: the group's committed offsets for the input partitions.
    :param force: plan even when the verdict says aligning loses or duplicates output.
    :param spec_writers: the spec's ``writers``, for the verdict when the checkpoint records no choice.
    :param retention: the brokers' ``offsets.retention.minutes`` (``None``: the expiry is not judged).
    :param in_flight_batch: what the output topic shows of the batch in flight whose offsets may have expired
        (:func:`~airflow_provider_eos.core.in_flight_batch.parse_in_flight` reads a string).
    :return: the plan.
    :raises RepairError: if the checkpoint has no committed batch (and no expired batch in flight), the
        verdict forbids aligning and ``force`` is not set, the batch in flight may have expired and
        ``in_flight_batch`` does not say what became of it, or ``in_flight_batch`` is given without one.
    """
    in_flight_batch = parse_in_flight(in_flight_batch)
    last_committed = reader.latest_committed_batch()
    report: VerificationReport = verify_checkpoint(reader, committed, spec_writers=spec_writers, retention=retention)
    expired = report.expired_batch
    if expired is None and in_flight_batch is not None:
        raise unexpected_answer(in_flight_batch)
    if last_committed is None and expired is None:
        raise RepairError(
            f"checkpoint {reader.root} has no committed batch, so there is nothing to align the group to",
            fix="start the pipeline: the sink's first batch needs no marker in the group",
        )
    warnings: list[str] = []
    # Every row's verdict, not only the overall one: aligning rewrites every partition, so one partition
    # it would harm refuses the plan even when another's verdict ranks worse.
    blocking = max((verdict for verdict in {report.overall, *(row.verdict for row in report.rows)}
                    if verdict in _ALIGN_CONSEQUENCE), key=lambda verdict: verdict.severity, default=None)
    consequence = None if blocking is None else _ALIGN_CONSEQUENCE[blocking]
    if report.partially_written_batch is not None:
        consequence = _PARTIAL_BATCH_CONSEQUENCE
    c = -1 if last_committed is None else last_committed
    if blocking is not None and consequence is not None:
        message = consequence.format(a=c + 1, c=c)
        said = report.overall.value if blocking is report.overall else f"{report.overall.value} ({blocking.value} rows)"
        if not force:
            next_step_applies = blocking is report.overall and blocking is not Verdict.DIVERGED
            raise RepairError(
                f"refusing to align the group to batch {c}: verification says {said}; {message}",
                fix=report.next_step if next_step_applies else "investigate, then pass --force",
            )
        warnings.append(f"forced despite {said}: {message}")

    if expired is None:
        target_batch, target = c, reader.planned_offsets(c)
    else:
        # Not forceable: no verdict is overridden here, a fact only the output topic holds is missing.
        chosen = expired_batch_target(
            expired, in_flight_batch, last_offsets=None if last_committed is None else reader.planned_offsets(c),
            in_flight_offsets=reader.planned_offsets(expired),
        )
        target_batch, target = chosen.batch_id, chosen.offsets
        warnings.append(chosen.warning)
    query_id = reader.query_id()
    target_metadata = BatchMarker(query_id, target_batch).encode()
    rows = []
    for tp in sorted(target):
        current = committed.get(tp)
        rows.append(
            AlignRow(
                tp=tp,
                before_offset=None if current is None else current.offset,
                before_metadata=None if current is None else current.metadata,
                after_offset=target[tp],
                after_metadata=target_metadata,
            )
        )
    untouched = tuple(sorted(tp for tp, value in committed.items() if tp not in target and value is not None))
    if untouched:
        warnings.append(
            f"{len(untouched)} partition(s) in the group are not in offsets/{target_batch} and stay as they are"
        )
    return AlignPlan(
        query_id=query_id,
        batch_id=target_batch,
        rows=tuple(rows),
        untouched=untouched,
        verdict=report.overall,
        warnings=tuple(warnings),
        expired_batch=expired,
        in_flight_batch=in_flight_batch if expired is not None else None,
    )
