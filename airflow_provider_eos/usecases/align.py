"""Align: commit the checkpoint's ``offsets/C`` with marker ``C`` to the sink group, the repair for ``NO_MARKER``."""

from __future__ import annotations

from typing import Any

from airflow_provider_eos.core.in_flight_batch import InFlightBatch, parse_in_flight
from airflow_provider_eos.core.repair import AlignPlan, check_expected_plan, expectation_notes, plan_align
from airflow_provider_eos.core.transactions import SafetyCheck
from airflow_provider_eos.core.verification import VerificationReport, verify_checkpoint
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.liveness import check_not_alive, forced_notes
from airflow_provider_eos.usecases.result import Outcome, UseCaseResult
from airflow_provider_eos.usecases.roles import runs_as

__all__ = ["AlignOutcome", "align"]


class AlignOutcome(UseCaseResult[AlignPlan]):
    """The align plan, whether it was committed, and the verification read back from Kafka afterwards.

    :param group_id: the sink group.
    :param executed: whether offsets were committed.
    :param after: the verification after committing (or, for a dry run or a no-op, of the group as it is).
    :param safety: the liveness check an execution passed (``None``: nothing was committed).
    """

    group_id: str
    executed: bool
    after: VerificationReport
    safety: SafetyCheck | None = None

    def details(self) -> dict[str, Any]:
        """The plan, ``executed``, the verdict and report read back afterwards, and ``safety``."""
        return {
            "group_id": self.group_id,
            "executed": self.executed,
            **self.report.to_dict(),
            "verdict_after": self.after.overall.value,
            "after": self.after.to_dict(),
            "safety": None if self.safety is None else self.safety.to_dict(),
        }


@runs_as("recovery")
def align(
    clients: PipelineClients, *, execute: bool = False, force: bool = False, expected_plan: str | None = None,
    in_flight_batch: InFlightBatch | str | None = None,
) -> AlignOutcome:
    """Plan the alignment and, only with ``execute``, commit it; then verify what Kafka holds.

    Committed offsets the verification still disagrees with are a finding, not "done": the
    commit was acknowledged, yet the group does not hold the plan (something else committed).
    The group must have no active members (stop the job first). Committing is refused while the
    pipeline looks alive unless ``force``, and when ``expected_plan`` is given and the plan is no
    longer the one with that fingerprint; a no-op refuses nothing.

    :param execute: commit the plan; without it nothing changes.
    :param force: align despite a verdict that makes aligning lose or duplicate output, and even
        though the pipeline looks alive.
    :param expected_plan: the plan fingerprint the person read in the dry run.
    :param in_flight_batch: what the output topic shows of the batch in flight when its offsets may have
        expired (``written`` or ``not-written``; docs/design-notes.md note 61); ``force`` does not replace it.
    :raises CheckpointError: if there is no checkpoint, or a file is malformed.
    :raises RepairError: if the checkpoint has no committed batch, the verdict forbids aligning
        and ``force`` is not set, the batch in flight may have expired and ``in_flight_batch`` does not
        say what became of it (or is given without such a batch), or the plan is not ``expected_plan``.
    :raises UnsafeToActError: if committing while the pipeline looks alive, without ``force``.
    """
    spec = clients.spec
    answer = parse_in_flight(in_flight_batch)
    reader = clients.existing_checkpoint()
    # Read once: the plan and the read-back judge the batch in flight against the same retention.
    retention = clients.offsets_retention()
    plan = plan_align(reader, clients.committed_offsets(), force=force, spec_writers=spec.writers,
                      retention=retention, in_flight_batch=answer)
    executed = execute and not plan.is_noop
    safety = None
    if executed:
        check_expected_plan(plan.fingerprint, expected_plan, repair="align")
        safety = check_not_alive(clients, action="align", force=force)
        clients.commit_offsets(plan.offsets_with_metadata())
    # Read back from Kafka rather than trusting the plan, so "after" is what the group holds.
    after = verify_checkpoint(reader, clients.committed_offsets(), spec_writers=spec.writers, retention=retention)
    disagrees = executed and not after.ok
    if disagrees:
        summary = f"committed the plan, but verification afterwards says {after.overall.value}"
        next_step = after.next_step
    elif executed:
        summary = f"committed offsets/{plan.batch_id} with marker {plan.batch_id} to group {spec.group_id!r}"
        next_step = "Restart the pipeline: the next batch proceeds from the committed offsets." + (
            "" if plan.expired_batch is None else
            f" Spark replays batch {plan.expired_batch} and the sink "
            + ("skips it (its marker is committed)." if plan.batch_id == plan.expired_batch else "writes it once."))
    elif plan.is_noop:
        summary = f"the group {spec.group_id!r} already holds offsets/{plan.batch_id} with its marker"
        next_step = "Nothing to do: nothing to align."
    else:
        summary = f"dry run: {len(plan.changes)} of {len(plan.rows)} partition(s) would change"
        told = "" if plan.in_flight_batch is None else f" --in-flight-batch {plan.in_flight_batch.value}"
        next_step = (
            f"Stop the job, then execute this plan (eos repair align --spec FILE{told} --execute --expect-plan "
            f"{plan.fingerprint}; in Airflow AlignGroupOffsetsOperator with dry_run=False and expected_plan="
            f"'{plan.fingerprint}', in eos_manual_recovery Plan fingerprint {plan.fingerprint})."
        )
    return AlignOutcome(
        use_case="align",
        pipeline=spec.name,
        group_id=spec.group_id,
        outcome=Outcome.FINDING if disagrees else Outcome.OK,
        summary=summary,
        next_step=next_step,
        report=plan,
        executed=executed,
        after=after,
        safety=safety,
        notes=(*forced_notes(safety), *expectation_notes(plan.fingerprint, expected_plan, executed=executed)),
    )
