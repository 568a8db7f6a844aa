"""Aligning the sink group to the checkpoint: commit ``offsets/C`` with marker ``C``.

The repair for ``NO_MARKER`` (docs/architecture.md, recovery). It refuses on ``KAFKA_BEHIND`` (would lose
output), ``KAFKA_AHEAD_SAFE`` (would duplicate the replay) and ``DIVERGED`` unless forced. The
plan holds every offset and metadata it replaces, so the group can be put back; committing it
needs Kafka and is the shell's job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import computed_field

from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffsets
from airflow_provider_eos.core.repair.fingerprint import plan_fingerprint
from airflow_provider_eos.core.topic_partition import PartitionObject, PartitionRow, TopicPartition
from airflow_provider_eos.core.verification import Verdict, VerificationReport, verify_checkpoint

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.core.spec import Writers

__all__ = ["AlignPlan", "AlignRow", "plan_align"]


class AlignRow(PartitionRow):
    """One partition of an align plan: the group's offset before and the target after.

    JSON: ``topic``, ``partition`` (see :class:`~airflow_provider_eos.core.topic_partition.PartitionRow`),
    the four offsets and metadata, and ``changed``.

    :param tp: the input partition.
    :param before_offset: the group's committed offset now (``None``: nothing committed).
    :param before_metadata: its metadata now (``None``: nothing committed).
    :param after_offset: ``offsets/C`` for this partition.
    :param after_metadata: the marker of batch ``C`` of the checkpoint's query.
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
    """Commit the checkpoint's ``offsets/C`` with marker ``C`` to the sink group.

    The plan holds every offset and metadata it replaces (``before_*``), so the group can be
    put back. Committing needs Kafka and is the shell's job: it commits
    :meth:`offsets_with_metadata` unless :attr:`is_noop`.

    JSON: ``repair`` (``"align"``), the fields below, ``is_noop``, ``changes`` (how many rows
    change) and ``fingerprint``.

    :param query_id: the checkpoint's query id.
    :param batch_id: the last committed batch ``C``.
    :param rows: one row per partition of ``offsets/C``.
    :param untouched: partitions the group has but ``offsets/C`` does not; left as they are.
    :param verdict: the verification verdict the plan was made under.
    :param warnings: things the operator should read before committing.
    """

    query_id: str
    batch_id: int
    rows: tuple[AlignRow, ...]
    untouched: tuple[PartitionObject, ...]
    verdict: Verdict
    warnings: tuple[str, ...] = ()

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
    reader: CheckpointReader, committed: CommittedOffsets, *, force: bool = False, spec_writers: Writers | None = None
) -> AlignPlan:
    """Plan aligning the sink group to the checkpoint: ``offsets/C`` with marker ``C``.

    This is the repair for ``NO_MARKER`` (the sink never committed for this checkpoint). On
    ``IN_SYNC`` the plan is a no-op. For other verdicts aligning loses or duplicates output,
    so it is refused unless ``force`` is set (the plan then carries a warning).

    :param reader: the checkpoint.
    :param committed: the group's committed offsets for the input partitions.
    :param force: plan even when the verdict says aligning loses or duplicates output.
    :param spec_writers: the spec's ``writers``, for the verdict when the checkpoint records no choice.
    :return: the plan.
    :raises RepairError: if the checkpoint has no committed batch, or the verdict forbids
        aligning and ``force`` is not set.
    """
    last_committed = reader.latest_committed_batch()
    if last_committed is None:
        raise RepairError(
            f"checkpoint {reader.root} has no committed batch, so there is nothing to align the group to",
            fix="start the pipeline: the sink's first batch needs no marker in the group",
        )
    report: VerificationReport = verify_checkpoint(reader, committed, spec_writers=spec_writers)
    warnings: list[str] = []
    # Every row's verdict, not only the overall one: aligning rewrites every partition, so one partition
    # it would harm refuses the plan even when another's verdict ranks worse.
    blocking = max((verdict for verdict in {report.overall, *(row.verdict for row in report.rows)}
                    if verdict in _ALIGN_CONSEQUENCE), key=lambda verdict: verdict.severity, default=None)
    consequence = None if blocking is None else _ALIGN_CONSEQUENCE[blocking]
    if report.partially_written_batch is not None:
        consequence = _PARTIAL_BATCH_CONSEQUENCE
    if blocking is not None and consequence is not None:
        message = consequence.format(a=last_committed + 1, c=last_committed)
        said = report.overall.value if blocking is report.overall else f"{report.overall.value} ({blocking.value} rows)"
        if not force:
            next_step_applies = blocking is report.overall and blocking is not Verdict.DIVERGED
            raise RepairError(
                f"refusing to align the group to batch {last_committed}: verification says {said}; {message}",
                fix=report.next_step if next_step_applies else "investigate, then pass --force",
            )
        warnings.append(f"forced despite {said}: {message}")

    query_id = reader.query_id()
    target_metadata = BatchMarker(query_id, last_committed).encode()
    target = reader.planned_offsets(last_committed)
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
            f"{len(untouched)} partition(s) in the group are not in offsets/{last_committed} and stay as they are"
        )
    return AlignPlan(
        query_id=query_id,
        batch_id=last_committed,
        rows=tuple(rows),
        untouched=untouched,
        verdict=report.overall,
        warnings=tuple(warnings),
    )
