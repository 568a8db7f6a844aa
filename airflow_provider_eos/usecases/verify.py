"""Verify: compare the sink group's committed offsets and markers with the checkpoint (docs/architecture.md)."""

from __future__ import annotations

from typing import Any

from airflow_provider_eos.core.verification import VerificationReport, verify_checkpoint
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.result import Outcome, UseCaseResult
from airflow_provider_eos.usecases.roles import runs_as

__all__ = ["VerifyResult", "verify"]


class VerifyResult(UseCaseResult[VerificationReport]):
    """The verification report of one pipeline; a finding unless ``IN_SYNC`` or ``KAFKA_AHEAD_SAFE``.

    :param group_id: the sink group compared.
    """

    group_id: str

    def details(self) -> dict[str, Any]:
        """The report with the group it compared."""
        return {"group_id": self.group_id, **self.report.to_dict()}


@runs_as("recovery")
def verify(clients: PipelineClients) -> VerifyResult:
    """Verify the sink group against the checkpoint.

    The verdict follows the writer the job uses: the checkpoint's recorded choice, else the spec's
    explicit ``writers``, else the driver writer's rules (see
    :mod:`airflow_provider_eos.core.verification.writers`); the report says which.

    A checkpoint that does not exist yet verifies as "nothing committed", so a pipeline's first
    run passes; a wrong location of a pipeline that ran before still fails, because the group's
    markers name a query the missing checkpoint does not have (``DIVERGED``).

    :raises CheckpointError: if a checkpoint file the verdict needs is malformed.
    :raises GroupOffsetsError: if the group's offsets cannot be read.
    :raises KafkaNoAnswerError: if a connected broker gave a request no answer within the clients' timeout
        (retryable).
    """
    spec = clients.spec
    notes: tuple[str, ...] = ()
    if not clients.checkpoint.exists():
        notes = (f"no checkpoint at {spec.checkpoint_location!r} yet: the pipeline has not committed a batch",)
    report = verify_checkpoint(clients.checkpoint, clients.committed_offsets(), spec_writers=spec.writers,
                               retention=clients.offsets_retention())
    agreement = "agree" if report.ok else "disagree"
    return VerifyResult(
        use_case="verify",
        pipeline=spec.name,
        group_id=spec.group_id,
        outcome=Outcome.OK if report.ok else Outcome.FINDING,
        summary=f"the sink group {spec.group_id!r} and checkpoint {spec.checkpoint_location} {agreement} "
        f"({report.overall.value})",
        next_step=report.next_step,
        report=report,
        notes=notes,
    )
