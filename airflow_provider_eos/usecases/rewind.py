"""Rewind: move the checkpoint's batches after ``K`` into a backup folder, the repair for ``KAFKA_BEHIND``."""

from __future__ import annotations

from typing import Any

from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.repair import (
    RewindResult,
    check_expected_plan,
    execute_rewind,
    expectation_notes,
    plan_rewind,
)
from airflow_provider_eos.core.transactions import SafetyCheck
from airflow_provider_eos.core.verification import verify_checkpoint
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.liveness import check_not_alive, forced_notes
from airflow_provider_eos.usecases.result import Outcome, UseCaseResult
from airflow_provider_eos.usecases.roles import runs_as

__all__ = ["RewindOutcome", "rewind"]


class RewindOutcome(UseCaseResult[RewindResult]):
    """The rewind plan (dry run) or what was moved; always :attr:`Outcome.OK` once it ran.

    :param safety: the liveness check an execution passed (``None``: nothing was executed).
    """

    safety: SafetyCheck | None = None

    def details(self) -> dict[str, Any]:
        """The result (the plan's keys, ``executed``, ``backup_dir``, ``moved``) and ``safety``."""
        return {**self.report.to_dict(), "safety": None if self.safety is None else self.safety.to_dict()}


@runs_as("recovery")
def rewind(
    clients: PipelineClients,
    *,
    to_batch: int | None = None,
    execute: bool = False,
    force: bool = False,
    expected_plan: str | None = None,
) -> RewindOutcome:
    """Plan the rewind to ``to_batch`` and, only with ``execute``, move the files (stop the job first).

    Executing is refused while the pipeline looks alive (a checkpoint commit within the quiet
    period, a young transaction under the prefix) unless ``force``, and when ``expected_plan`` is
    given and the plan is no longer the one with that fingerprint. A plan with nothing to move
    is a no-op and refuses nothing.

    :param to_batch: the batch to rewind to (``-1``: before the first); ``None`` verifies and
        takes the batch the ``KAFKA_BEHIND`` verdict names.
    :param execute: move the files; without it nothing changes.
    :param force: execute even though the pipeline looks alive.
    :param expected_plan: the plan fingerprint the person read in the dry run.
    :raises CheckpointError: if there is no checkpoint, or a file is malformed.
    :raises RepairError: if the rewind is impossible (forward, purged files), ``to_batch`` is
        ``None`` and the verdict names no batch, or the plan is not ``expected_plan``.
    :raises UnsafeToActError: if executing while the pipeline looks alive, without ``force``.
    """
    reader = clients.existing_checkpoint()
    notes: list[str] = []
    if to_batch is None:
        report = verify_checkpoint(reader, clients.committed_offsets(), spec_writers=clients.spec.writers)
        if report.rewind_to_batch is None:
            raise RepairError(
                f"no batch to rewind to was given and verification names none (verdict {report.overall.value}); "
                "nothing to rewind",
                fix=report.next_step,
            )
        to_batch = report.rewind_to_batch
        notes.append(f"verification says {report.overall.value}: rewinding to batch {to_batch}")
    plan = plan_rewind(reader, to_batch)
    safety = None
    if execute and not plan.is_noop:
        check_expected_plan(plan.fingerprint, expected_plan, repair="rewind")
        safety = check_not_alive(clients, action="rewind", force=force)
        result = execute_rewind(plan, reader)
    else:
        result = RewindResult(plan=plan, executed=False)
    notes += [*forced_notes(safety), *expectation_notes(plan.fingerprint, expected_plan, executed=result.executed)]
    if result.executed:
        summary = (
            f"rewound the checkpoint to batch {to_batch}: moved {len(result.moved)} file(s) to {result.backup_dir}"
        )
        next_step = f"Restart the pipeline: Spark replays from batch {to_batch + 1} and the sink produces it once."
    elif result.is_noop:
        summary = f"the checkpoint already ends at batch {to_batch}: nothing to move"
        next_step = "Nothing to do: nothing to rewind."
    else:
        summary = f"dry run: rewinding to batch {to_batch} would move {len(result.plan.moves)} file(s)"
        fingerprint = plan.fingerprint
        next_step = (
            "Stop the job, then execute this plan (eos repair rewind --spec FILE --to-batch "
            f"{to_batch} --execute --expect-plan {fingerprint}; in Airflow RewindCheckpointOperator with "
            f"dry_run=False and expected_plan='{fingerprint}', in eos_manual_recovery Plan fingerprint {fingerprint})."
        )
    return RewindOutcome(
        use_case="rewind",
        pipeline=clients.spec.name,
        outcome=Outcome.OK,
        summary=summary,
        next_step=next_step,
        report=result,
        notes=tuple(notes),
        safety=safety,
    )
