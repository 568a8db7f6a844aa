"""Rewind: move the checkpoint's batches after ``K`` into a backup folder, the repair for ``KAFKA_BEHIND``."""

from __future__ import annotations

from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.repair import RewindResult
from airflow_provider_eos.core.repair import rewind as rewind_checkpoint
from airflow_provider_eos.core.verification import verify_checkpoint
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.result import Outcome, UseCaseResult
from airflow_provider_eos.usecases.roles import runs_as

__all__ = ["RewindOutcome", "rewind"]


class RewindOutcome(UseCaseResult[RewindResult]):
    """The rewind plan (dry run) or what was moved; always :attr:`Outcome.OK` once it ran."""


@runs_as("recovery")
def rewind(clients: PipelineClients, *, to_batch: int | None = None, execute: bool = False) -> RewindOutcome:
    """Plan the rewind to ``to_batch`` and, only with ``execute``, move the files (stop the job first).

    :param to_batch: the batch to rewind to (``-1``: before the first); ``None`` verifies and
        takes the batch the ``KAFKA_BEHIND`` verdict names.
    :param execute: move the files; without it nothing changes.
    :raises CheckpointError: if there is no checkpoint, or a file is malformed.
    :raises RepairError: if the rewind is impossible (forward, purged files), or ``to_batch`` is
        ``None`` and the verdict names no batch.
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
    result = rewind_checkpoint(reader, to_batch, execute=execute)
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
        next_step = (
            f"Stop the job, then execute the plan (eos repair rewind --spec FILE --to-batch {to_batch} --execute; "
            "in Airflow RewindCheckpointOperator with dry_run=False)."
        )
    return RewindOutcome(
        use_case="rewind",
        pipeline=clients.spec.name,
        outcome=Outcome.OK,
        summary=summary,
        next_step=next_step,
        report=result,
        notes=tuple(notes),
    )
