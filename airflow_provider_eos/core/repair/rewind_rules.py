"""When a rewind is refused, and what its plan warns about: one named rule each (:func:`~.rewind_plan.plan_rewind`).

Rewinding to batch ``K`` makes ``K`` the checkpoint's last committed batch; Spark then restarts
from ``K + 1``. A rule returns the :class:`~airflow_provider_eos.core.errors.RepairError` that
refuses the target, or ``None`` when it has nothing against it. :func:`impossible_batch_id`
judges the number alone, before the checkpoint is read; :func:`first_refusal` then tries the
rules of :data:`REFUSALS` in order:

============================== ===================================================================
rule                           refuses when
============================== ===================================================================
:func:`impossible_batch_id`    ``K < -1`` (``-1`` is "before the first batch")
:func:`after_last_commit`      ``K`` is after the last committed batch: a rewind cannot go forward
:func:`restart_files_purged`   ``K >= 0`` and ``offsets/K``, ``commits/K`` or ``offsets/K-1`` is gone
:func:`first_batch_purged`     ``K = -1`` and ``offsets/0`` is gone
============================== ===================================================================

:func:`state_purged` refuses a stateful query's target whose state version ``K + 1`` is gone
(it needs the state scan, which the plan makes after these rules passed), and
:func:`replans_uncommitted_batch` is the plan's warning when ``K`` is the last committed batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.repair.rewind_files import StateScan

__all__ = [
    "REFUSALS",
    "RefusalRule",
    "RetainedBatches",
    "RewindTarget",
    "after_last_commit",
    "first_batch_purged",
    "first_refusal",
    "impossible_batch_id",
    "replans_uncommitted_batch",
    "restart_files_purged",
    "state_purged",
]


@dataclass(frozen=True)
class RetainedBatches:
    """The batches whose log files the checkpoint still has: Spark purges old ones
    (``spark.sql.streaming.minBatchesToRetain``).

    :param offsets: the ``offsets/N`` batches, in order.
    :param commits: the ``commits/N`` batches.
    """

    offsets: tuple[int, ...]
    commits: frozenset[int]

    @property
    def oldest_planned(self) -> int | None:
        """The oldest retained ``offsets/`` batch."""
        return self.offsets[0] if self.offsets else None

    @property
    def oldest_committed(self) -> int | None:
        """The oldest retained ``commits/`` batch."""
        return min(self.commits) if self.commits else None

    def missing_for_restart(self, to_batch: int) -> list[str]:
        """The files a restart from ``to_batch`` (``>= 0``) needs that are gone: ``offsets/K``, ``commits/K``
        and ``offsets/K-1`` (Spark's ``validateOffsetLogAndGetPrevOffset``: "batch K-1 doesn't exist")."""
        needed = [f"offsets/{to_batch}", f"commits/{to_batch}"] + ([f"offsets/{to_batch - 1}"] if to_batch else [])
        have = {f"offsets/{b}" for b in self.offsets} | {f"commits/{b}" for b in self.commits}
        return [name for name in needed if name not in have]

    def earliest_rewind_target(self) -> int | None:
        """Lowest ``K`` a rewind accepts: -1 if ``offsets/0`` is retained, else the lowest ``K`` with
        ``offsets/K``, ``commits/K`` and ``offsets/K-1`` retained (``None``: no such ``K``)."""
        if self.oldest_planned == 0:
            # With the whole history retained, even "before the first batch" is reachable.
            return -1
        have = set(self.offsets)
        return next((batch for batch in self.offsets if batch in self.commits and batch - 1 in have), None)

    def earliest_fix(self, otherwise: str) -> str:
        """The fix of a refusal for purged files: the earliest target the retained files allow, else ``otherwise``."""
        earliest = self.earliest_rewind_target()
        if earliest is None:
            return otherwise
        return (
            f"the earliest batch the retained offsets/ and commits/ allow is {earliest} "
            "(a stateful query may need a later one)"
        )


@dataclass(frozen=True)
class RewindTarget:
    """A rewind's target ``K`` with what the checkpoint holds now: what the rules judge.

    :param location: the checkpoint as the operator knows it, for the messages.
    :param to_batch: the target batch ``K``; ``-1`` means before the first batch.
    :param last_committed: the last committed batch now (``None``: none).
    :param last_planned: the last planned batch now (``None``: none).
    :param retained: the retained log batches.
    """

    location: str
    to_batch: int
    last_committed: int | None
    last_planned: int | None
    retained: RetainedBatches


#: A refusal rule: the error when it refuses the target, ``None`` when it has nothing against it.
RefusalRule = Callable[[RewindTarget], RepairError | None]


def impossible_batch_id(to_batch: int) -> RepairError | None:
    """Refuses ``K < -1``: batch ids start at 0, and -1 already means "before the first batch".

    Judged on the number alone, before the checkpoint is listed: an impossible request reads nothing.
    """
    if to_batch >= -1:
        return None
    return RepairError(
        f"cannot rewind to batch {to_batch}: batch ids start at 0",
        fix="pass --to-batch -1 to rewind to before the first batch, or a batch id >= 0",
    )


def after_last_commit(t: RewindTarget) -> RepairError | None:
    """Refuses a target after the last committed batch: a rewind moves files away, it cannot add batches."""
    if t.to_batch <= (-1 if t.last_committed is None else t.last_committed):
        return None
    return RepairError(
        f"cannot rewind forward to batch {t.to_batch}: the last committed batch of {t.location} is "
        f"{'none' if t.last_committed is None else t.last_committed}",
        fix="pass a batch at or before the last committed batch (verify reports the right one)",
    )


def restart_files_purged(t: RewindTarget) -> RepairError | None:
    """Refuses ``K >= 0`` when Spark purged a log file a restart from ``K`` needs."""
    missing = t.retained.missing_for_restart(t.to_batch) if t.to_batch >= 0 else []
    if not missing:
        return None
    return RepairError(
        f"cannot rewind {t.location} to batch {t.to_batch}: {', '.join(missing)} "
        f"{'is' if len(missing) == 1 else 'are'} gone "
        f"(oldest retained offsets file: offsets/{t.retained.oldest_planned}); Spark purges old batches "
        "(spark.sql.streaming.minBatchesToRetain) and needs them to restart from batch "
        f"{t.to_batch}",
        fix=t.retained.earliest_fix("this checkpoint cannot be rewound; align the group or start a new checkpoint"),
    )


def first_batch_purged(t: RewindTarget) -> RepairError | None:
    """Refuses ``K = -1`` when ``offsets/0`` was purged: the batches before the oldest cannot be replayed as planned."""
    oldest = t.retained.oldest_planned
    if t.to_batch >= 0 or oldest is None or oldest == 0:
        return None
    return RepairError(
        f"cannot rewind {t.location} to before the first batch: offsets/0 was purged (oldest retained "
        f"offsets file: offsets/{oldest}), so batches before {oldest} cannot be replayed as planned",
        fix=t.retained.earliest_fix("start a new checkpoint"),
    )


#: The refusal rules in the order they are tried; the first that refuses decides the message.
REFUSALS: tuple[RefusalRule, ...] = (after_last_commit, restart_files_purged, first_batch_purged)


def first_refusal(target: RewindTarget) -> RepairError | None:
    """The error of the first rule of :data:`REFUSALS` that refuses the target; ``None``: the target is possible."""
    return next((error for rule in REFUSALS if (error := rule(target)) is not None), None)


def state_purged(t: RewindTarget, scan: StateScan) -> RepairError | None:
    """Refuses ``K >= 0`` when a state store keeps no version at or below ``K + 1`` (batch ``K`` commits ``K + 1``)."""
    if t.to_batch < 0:
        return None
    purged = next((directory for directory, kept in sorted(scan.lowest_kept.items()) if kept is None), None)
    if purged is None:
        return None
    return RepairError(
        f"cannot rewind {t.location} to batch {t.to_batch}: state store {purged} keeps no "
        f"version at or below {t.to_batch + 1} (lowest: {scan.lowest_present[purged]}); "
        "Spark purged the state that batch needs",
        fix="pick a later batch, or start a new checkpoint and reprocess",
    )


def replans_uncommitted_batch(t: RewindTarget) -> str | None:
    """The warning when ``K`` is the last committed batch and a later batch is planned but not committed.

    The rewind moves that ``offsets/N``, so Spark plans it anew, possibly with another range; after
    ``KAFKA_AHEAD_SAFE`` that is wrong, because the sink would find its marker with other offsets.
    """
    at_last_commit = t.to_batch == (-1 if t.last_committed is None else t.last_committed)
    if not at_last_commit or t.last_planned is None or t.last_planned <= t.to_batch:
        return None
    return (
        f"offsets/{t.last_planned} (planned, not committed) will be moved, so Spark plans batch "
        f"{t.last_planned} anew, possibly with a different range; if verify says KAFKA_AHEAD_SAFE "
        "do not execute this: the sink would find its marker with other offsets"
    )
