"""The verification report: the rows, the overall verdict, and what to do about it.

The model holds what :func:`~airflow_provider_eos.core.verification.compare.verify` found;
everything else (``ok``, ``counts``, ``rewind_to_batch``, ``next_step``) is derived from it and
added to the JSON form. Its text and card forms are in :mod:`airflow_provider_eos.core.presentation`.
"""

from __future__ import annotations

from collections import Counter

from pydantic import computed_field

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.offsets_expiry import in_flight_choices
from airflow_provider_eos.core.verification.verdict import PartitionVerdict, Verdict
from airflow_provider_eos.core.verification.writers import WritersInUse, writers_in_use

__all__ = ["VerificationReport"]


class VerificationReport(FrozenModel):
    """The outcome of :func:`~airflow_provider_eos.core.verification.verify`.

    :param query_id: the checkpoint's query id (``None``: the checkpoint has no ``metadata``).
    :param last_committed: the last committed batch ``C`` (``None``: none).
    :param last_planned: the last planned batch (``None``: none).
    :param rows: one row per partition, ordered by topic and partition.
    :param overall: the worst row verdict, or ``DIVERGED`` if markers disagree (see
        :attr:`issues`); ``IN_SYNC`` when there are no rows.
    :param issues: findings that concern the group as a whole rather than one partition.
    :param writers: the writer whose rules the verdict applied, and where that came from.
    :param expired_batch: the planned, uncommitted batch whose offsets may have expired where the group holds
        nothing for it (docs/design-notes.md note 55); ``None``: no such row.

    Its JSON form (``model_dump(mode="json")``, :meth:`to_dict`) adds ``ok``, ``counts``,
    ``rewind_to_batch``, ``partially_written_batch`` and ``next_step``; each row names its
    partition by ``topic`` and ``partition``.
    """

    query_id: str | None
    last_committed: int | None
    last_planned: int | None
    rows: tuple[PartitionVerdict, ...]
    overall: Verdict
    issues: tuple[str, ...] = ()
    writers: WritersInUse = writers_in_use(None, None)
    expired_batch: int | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """True only for ``IN_SYNC`` and ``KAFKA_AHEAD_SAFE``: the pipeline may resume as is."""
        return self.overall.ok

    @computed_field  # type: ignore[prop-decorator]
    @property
    def counts(self) -> dict[Verdict, int]:
        """How many partitions got each verdict (every verdict present, zeros included)."""
        counted = Counter(row.verdict for row in self.rows)
        return {verdict: counted.get(verdict, 0) for verdict in Verdict}

    @property
    def nothing_to_verify(self) -> bool:
        """True when the checkpoint has committed nothing and the group holds nothing."""
        return self.last_committed is None and all(row.group_offset is None for row in self.rows)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rewind_to_batch(self) -> int | None:
        """The batch to rewind the checkpoint to when the overall verdict is ``KAFKA_BEHIND``.

        It is the lowest marker batch among the behind partitions: after the rewind Spark
        replays from the batch after it, so no missing output is skipped.
        """
        if self.overall is not Verdict.KAFKA_BEHIND:
            return None
        behind = [
            row.marker_batch
            for row in self.rows
            if row.verdict is Verdict.KAFKA_BEHIND and row.marker_batch is not None
        ]
        return min(behind) if behind else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def partially_written_batch(self) -> int | None:
        """The batch the executor writers committed on some partitions and not yet on the others.

        Set when the verdict is ``KAFKA_AHEAD_SAFE`` by the executor writers' rules with partitions
        still ``IN_SYNC`` at the last committed batch: a crash in the middle of that batch.
        """
        if self.overall is not Verdict.KAFKA_AHEAD_SAFE or not self.writers.executors or self.last_committed is None:
            return None
        waiting = any(
            row.verdict is Verdict.IN_SYNC and row.marker_batch == self.last_committed for row in self.rows
        )
        return self.last_committed + 1 if waiting else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def next_step(self) -> str:
        """What the operator should do about the overall verdict, as one paragraph."""
        c = self.last_committed
        if self.overall is Verdict.IN_SYNC:
            if self.nothing_to_verify:
                return "Nothing to do: no batch has been committed yet and the group holds nothing to compare."
            return f"Nothing to do: the sink group and the checkpoint agree on batch {c}."
        partial = self.partially_written_batch
        if partial is not None:
            written = sum(1 for row in self.rows if row.verdict is Verdict.KAFKA_AHEAD_SAFE)
            waiting = sum(1 for row in self.rows if row.verdict is Verdict.IN_SYNC and row.marker_batch == c)
            return (
                f"Nothing to do: the replay skips the committed partitions and writes the rest. Batch {partial} is "
                f"in Kafka on {written} partition(s) and not yet on {waiting} (executor writers commit each input "
                f"partition in a transaction of its own and the job stopped in the middle of the batch); on restart "
                f"Spark replays batch {partial}, the committed partitions find their marker and are skipped, the "
                "others are written once."
            )
        if self.overall is Verdict.KAFKA_AHEAD_SAFE:
            ahead = (c if c is not None else -1) + 1
            return (
                f"Nothing to do: batch {ahead} is in Kafka but not yet in commits/. On restart Spark replays "
                f"batch {ahead} and the sink skips it because its marker is already committed."
            )
        if self.overall is Verdict.KAFKA_BEHIND:
            k = self.rewind_to_batch
            return (
                f"Rewind the checkpoint to batch {k}: eos repair rewind --spec FILE --to-batch {k}. "
                f"The output of batches {(k if k is not None else -1) + 1}..{c} is missing from Kafka; "
                f"after the rewind Spark replays them and the sink, seeing marker {k}, produces them once. "
                "The rewind is a dry run unless executed, and it moves the later checkpoint files "
                "into a backup folder instead of deleting them."
                + (
                    f" But offsets/{k} is no longer in the checkpoint (Spark purged it), so the rewind "
                    "will be refused: the missing output can only be reproduced from a new checkpoint "
                    "started at the marker's offsets."
                    if any(
                        row.verdict is Verdict.KAFKA_BEHIND and row.wal_offset is None for row in self.rows
                    )
                    else ""
                )
            )
        if self.overall is Verdict.NO_MARKER and self.expired_batch is not None:
            n = self.expired_batch
            # Aligning to C lets the replay write N only where the sink then finds marker C: a partition new
            # in N (no offsets/C row) would still hold nothing for a batch planned that long ago.
            new_in_n = any(row.verdict is Verdict.NO_MARKER and row.checkpoint_offset is None for row in self.rows)
            return (
                f"Do not restart as is: batch {n} was planned longer ago than the brokers' offsets.retention.minutes "
                "and the group holds nothing for the NO_MARKER rows, so an earlier attempt may have written it and "
                "its offsets expired; nothing in Kafka tells which, so the sink refuses it and align will not guess. "
                f"Look in the output topic (read_committed) for batch {n}'s output of those partitions (their input "
                f"range is offsets/{n}'s; `eos repair align --spec FILE` prints it). "
                + in_flight_choices(n, align_replays=n > 0 and not new_in_n) + "."
            )
        if self.overall is Verdict.NO_MARKER:
            return (
                "Check that the spec's group_id is the sink's group: the group has nothing for "
                f"partitions the checkpoint committed up to batch {c}. If the group is right, the "
                "sink never ran against this checkpoint (e.g. it was written by another sink); "
                "then `eos repair align --spec FILE` commits offsets/C with markers so the next "
                "batch proceeds (batches up to C are not produced again), or rewind to before "
                "the first batch (--to-batch -1) to reproduce everything, once the group holds nothing "
                "for the input partitions (the sink's first batch accepts no other state: delete the "
                "group's offsets for them first)."
            )
        return (
            "Manual: no automatic repair is safe. Inspect the DIVERGED rows (and the issues "
            "above): a foreign query id means the checkpoint was recreated or another query "
            "uses the same group; offsets differing from the WAL mean something other than "
            "this sink committed. Once the checkpoint is established as the truth, "
            "`eos repair align --spec FILE --force` rewrites the group from offsets/C "
            "(output may then be missing or duplicated)."
        )
