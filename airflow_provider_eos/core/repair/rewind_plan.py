"""Planning a rewind: which batch the checkpoint goes back to and what that moves.

Rewinding the checkpoint to batch ``K`` makes ``K`` its last committed batch. It is the fix for
``KAFKA_BEHIND`` (group marker ``K`` < last committed ``C``): Spark then replays batches
``K+1..C``, whose output is missing from Kafka, and the sink, finding marker ``K`` (= the
previous batch), produces each of them exactly once.

Restarting from latest batch ``K`` needs ``offsets/K-1`` too (Spark's
``MicroBatchExecution.validateOffsetLogAndGetPrevOffset``: "batch K-1 doesn't exist" otherwise).
When a target is refused, and what a plan warns about, are the named rules of :mod:`.rewind_rules`;
:func:`plan_rewind` reads the checkpoint, applies them and lists the files to move.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import computed_field

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.repair.fingerprint import plan_fingerprint
from airflow_provider_eos.core.repair.rewind_files import FileMove, log_moves, move_order, scan_state
from airflow_provider_eos.core.repair.rewind_rules import (
    RetainedBatches,
    RewindTarget,
    first_refusal,
    impossible_batch_id,
    replans_uncommitted_batch,
    state_purged,
)

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader

__all__ = ["CheckpointBatches", "RewindPlan", "plan_rewind"]


class CheckpointBatches(FrozenModel):
    """The batches a checkpoint holds before a rewind.

    :param last_committed: the last committed batch.
    :param last_planned: the last planned batch.
    :param oldest_planned: the oldest retained ``offsets/`` batch.
    :param oldest_committed: the oldest retained ``commits/`` batch.
    """

    last_committed: int | None
    last_planned: int | None
    oldest_planned: int | None
    oldest_committed: int | None


class RewindPlan(FrozenModel):
    """What rewinding a checkpoint to batch ``to_batch`` moves; nothing is changed by planning.

    After the rewind, ``to_batch`` is the last committed (and last planned) batch; on restart
    Spark runs ``to_batch + 1`` onwards from the same start as before, because ``offsets/K`` and
    the source's initial offsets stay in place; it plans the batch's end anew (up to the offsets then
    available), which the sink accepts: it matches marker ``K`` at ``offsets/K``.

    JSON: ``repair`` (``"rewind"``), ``root``, ``location``, ``to_batch``, ``is_noop``, ``stateful``,
    ``before`` (the four batch numbers), ``after`` (``last_committed``, ``last_planned``),
    ``moves``, ``warnings`` and ``fingerprint``.

    :param root: the checkpoint root as the file system spells it.
    :param location: the checkpoint root as the operator knows it (``hdfs://...`` as given, an
        object-store URL with its scheme); shown in the plan, ``root`` when empty.
    :param to_batch: the target batch ``K``; ``-1`` means before the first batch.
    :param before: the checkpoint's batches now.
    :param moves: the files to move, in execution order.
    :param stateful: whether the query has a ``state/`` folder.
    :param warnings: things the operator should read before executing.
    """

    root: str
    to_batch: int
    before: CheckpointBatches
    moves: tuple[FileMove, ...]
    stateful: bool
    warnings: tuple[str, ...] = ()
    location: str = ""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def repair(self) -> Literal["rewind"]:
        """Which repair this is, for readers of the JSON."""
        return "rewind"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fingerprint(self) -> str:
        """What the dry run shows and an execution may be held to (:mod:`.fingerprint`)."""
        return plan_fingerprint(self)

    @property
    def last_committed_before(self) -> int | None:
        """The last committed batch now."""
        return self.before.last_committed

    @property
    def last_planned_before(self) -> int | None:
        """The last planned batch now."""
        return self.before.last_planned

    @property
    def oldest_planned(self) -> int | None:
        """The oldest retained ``offsets/`` batch now (a rewind keeps it)."""
        return self.before.oldest_planned

    @property
    def oldest_committed(self) -> int | None:
        """The oldest retained ``commits/`` batch now (a rewind keeps it)."""
        return self.before.oldest_committed

    @property
    def last_committed_after(self) -> int | None:
        """The last committed batch after the rewind."""
        if self.last_committed_before is None:
            return None
        return self.to_batch if self.to_batch >= 0 else None

    @property
    def last_planned_after(self) -> int | None:
        """The last planned batch after the rewind."""
        if self.last_planned_before is None:
            return None
        return min(self.last_planned_before, self.to_batch) if self.to_batch >= 0 else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def after(self) -> dict[str, int | None]:
        """The last committed and last planned batch after the rewind."""
        return {"last_committed": self.last_committed_after, "last_planned": self.last_planned_after}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def is_noop(self) -> bool:
        """True when there is nothing to move: the checkpoint already ends at ``to_batch``."""
        return not self.moves

    @property
    def paths(self) -> tuple[str, ...]:
        """The relative paths to move, in execution order."""
        return tuple(move.path for move in self.moves)


def plan_rewind(reader: CheckpointReader, to_batch: int) -> RewindPlan:
    """Plan rewinding the checkpoint so that ``to_batch`` becomes its last committed batch.

    This is the repair for ``KAFKA_BEHIND``: with group marker ``K`` below the last committed
    batch ``C``, rewinding to ``K`` makes Spark replay ``K+1..C``; their output is missing from
    Kafka, and the sink, seeing marker ``K`` (the previous batch), produces each once.

    Moves ``offsets/N`` and ``commits/N`` for ``N > K`` and, for stateful queries, state
    versions ``> K+1`` (batch ``N`` commits version ``N+1``) and operator metadata of batches
    ``> K``, each with its ``.crc`` sidecars. ``K = -1`` moves every batch: the query restarts
    from the Kafka source's initial offsets (``sources/0/0``) with empty state.

    :param reader: the checkpoint.
    :param to_batch: the batch ``K`` to rewind to, ``-1`` for before the first batch.
    :return: the plan; executing it is :func:`~airflow_provider_eos.core.repair.execute_rewind`.
    :raises RepairError: if ``K`` < -1, ``K`` is after the last committed batch, or Spark has
        purged files a restart from ``K`` needs (``offsets/K-1``, ``offsets/K``,
        ``commits/K``, state version ``K+1``).
    """
    root = reader.root.rstrip("/")
    shown = reader.display(root)
    fs = reader.fs
    if (impossible := impossible_batch_id(to_batch)) is not None:
        raise impossible
    retained = RetainedBatches(tuple(sorted(reader.offset_batches())), frozenset(reader.commit_batches()))
    target = RewindTarget(
        location=shown,
        to_batch=to_batch,
        last_committed=reader.latest_committed_batch(),
        last_planned=reader.latest_planned_batch(),
        retained=retained,
    )
    if (refused := first_refusal(target)) is not None:
        raise refused

    moves = log_moves(fs, root, "offsets", to_batch) + log_moves(fs, root, "commits", to_batch)
    stateful = bool(reader.state_dir_exists())
    if stateful:
        scan = scan_state(fs, root, max_version=to_batch + 1, max_batch=to_batch)
        if (purged := state_purged(target, scan)) is not None:
            raise purged
        moves += scan.moves
    warning = replans_uncommitted_batch(target)
    return RewindPlan(
        root=root,
        location=shown,
        to_batch=to_batch,
        before=CheckpointBatches(
            last_committed=target.last_committed,
            last_planned=target.last_planned,
            oldest_planned=target.retained.oldest_planned,
            oldest_committed=target.retained.oldest_committed,
        ),
        moves=move_order(moves),
        stateful=stateful,
        warnings=() if warning is None else (warning,),
    )
