"""Recovery tasks (DESIGN.md section 3): abort open transactions, verify, rewind, align.

Each operator calls the use case ``eos abort``, ``eos verify``, ``eos repair rewind`` and ``eos
repair align`` call (:mod:`airflow_provider_eos.usecases`), logs its text and returns its data
(XCom); the outcome decides the task's state as
:mod:`airflow_provider_eos.operators.use_case` describes: a finding (a verdict that needs a
repair, transactions left open, a group that still disagrees after align) fails the task
without retrying, after pushing the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.operators.use_case import EosUseCaseOperator, as_batch, as_bool, task_failures

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_eos.usecases.verify import VerifyResult

__all__ = [
    "AbortOpenTransactionsOperator",
    "AlignGroupOffsetsOperator",
    "RewindCheckpointOperator",
    "VerifyCommittedOffsetsOperator",
]

_RECOVERY_COLOR = "#fde2c4"


class AbortOpenTransactionsOperator(EosUseCaseOperator):
    """Abort the pipeline's lingering and hanging transactions (those under its transactional id prefix).

    Run it after a failure and before restarting the job, so ``read_committed`` consumers of the
    output move on. Logs the report's table and returns its data (XCom); fails when a
    transaction under the prefix is left open (after aborting, or found by a dry run).

    :param force: act even if the job looks alive (a recent checkpoint commit, or an ongoing
        transaction younger than its timeout); fencing then breaks a live job's next commit.
        (templated)
    :param dry_run: only report what would be aborted. (templated)
    :param driver_gone_task_id: a task of this run that established that the driver is gone
        (:class:`~airflow_provider_eos.operators.driver.ConfirmDriverGoneOperator`); its
        observation is the positive evidence that lets the abort end the dead driver's young
        transactions without ``force``. Without a GONE observation from it the task fails.
    """

    template_fields: Sequence[str] = (*EosUseCaseOperator.template_fields, "force", "dry_run")
    ui_color = _RECOVERY_COLOR

    def __init__(
        self,
        *,
        force: bool | str = False,
        dry_run: bool | str = False,
        driver_gone_task_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.force = force
        self.dry_run = dry_run
        self.driver_gone_task_id = driver_gone_task_id

    def execute(self, context: Context) -> dict[str, Any]:
        """Scan, abort unless dry-running, rescan; return the report."""
        from airflow_provider_eos.usecases.abort import abort

        force = as_bool(self.force, "force")
        dry_run = as_bool(self.dry_run, "dry_run")
        evidence = self._driver_gone_evidence(context)
        with task_failures():
            result = abort(self.pipeline_clients(), force=force, execute=not dry_run, driver_gone=evidence)
        return self.present(context, result)

    def _driver_gone_evidence(self, context: Context) -> str | None:
        if self.driver_gone_task_id is None:
            return None
        from airflow.sdk.exceptions import AirflowFailException

        from airflow_provider_eos.core.driver import DriverObservation

        seen = context["ti"].xcom_pull(task_ids=self.driver_gone_task_id)
        observation = DriverObservation.model_validate(seen) if seen else None
        if observation is None or not observation.gone:
            raise AirflowFailException(
                f"{self.driver_gone_task_id} gave no positive evidence that the driver is gone ({seen!r}); "
                "refusing to abort. Check the driver by hand, then use eos_manual_recovery."
            )
        return observation.evidence


class VerifyCommittedOffsetsOperator(EosUseCaseOperator):
    """Verify the sink group's committed offsets and batch markers against the checkpoint.

    Passes on ``IN_SYNC`` and ``KAFKA_AHEAD_SAFE`` (and on a checkpoint that has committed nothing
    yet). Fails, without retrying, on ``KAFKA_BEHIND``, ``NO_MARKER`` and ``DIVERGED``: each needs
    a repair or a person, which a retry would only delay. The verification table and the next
    step go to the log and into the failure message. The report's data is the task's XCom
    ``return_value`` in every outcome (pushed before failing), so a downstream repair task can
    template, e.g., ``{{ ti.xcom_pull(task_ids='verify')['rewind_to_batch'] }}``.

    :param max_table_rows: partitions shown in the log table, worst first (the XCom holds all).
    """

    ui_color = _RECOVERY_COLOR

    def __init__(self, *, max_table_rows: int = 100, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_table_rows = max_table_rows

    def execute(self, context: Context) -> dict[str, Any]:
        """Verify; return the report, or push it and fail."""
        from airflow_provider_eos.usecases.verify import verify

        with task_failures():
            result = verify(self.pipeline_clients())
        return self.present(context, result, max_rows=self.max_table_rows, hint=_airflow_hint(result))


def _airflow_hint(result: VerifyResult) -> str:
    """The next step's Airflow spelling, after the CLI spelling the core gives."""
    report = result.report
    if report.rewind_to_batch is not None:
        return (
            f"\nIn Airflow: RewindCheckpointOperator(to_batch={report.rewind_to_batch}) shows the plan; "
            "with dry_run=False it executes it (stop the job first)."
        )
    if report.overall.value == "NO_MARKER":
        return "\nIn Airflow: AlignGroupOffsetsOperator shows the plan; with dry_run=False it commits it."
    return ""


class RewindCheckpointOperator(EosUseCaseOperator):
    """Rewind the checkpoint to batch ``to_batch``: later batch files move into a backup folder.

    The repair for ``KAFKA_BEHIND``. Dry run by default: logs the before/after table and the
    files that would move, changes nothing. With ``dry_run=False`` the files move into
    ``<checkpoint>.eos-backup-<UTC time>/`` next to the checkpoint (nothing is deleted); stop
    the job first. Returns the result's data.

    :param to_batch: the batch to rewind to (``-1``: before the first batch). ``None`` (or an
        empty rendered template) runs the verification and takes the batch it names, failing
        when the verdict is not ``KAFKA_BEHIND``. (templated)
    :param dry_run: only plan. (templated)
    """

    template_fields: Sequence[str] = (*EosUseCaseOperator.template_fields, "to_batch", "dry_run")
    ui_color = _RECOVERY_COLOR

    def __init__(self, *, to_batch: int | str | None = None, dry_run: bool | str = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.to_batch = to_batch
        self.dry_run = dry_run

    def execute(self, context: Context) -> dict[str, Any]:
        """Plan (and unless dry-running, execute) the rewind; return the result."""
        from airflow_provider_eos.usecases.rewind import rewind

        dry_run = as_bool(self.dry_run, "dry_run")
        to_batch = as_batch(self.to_batch, "to_batch")
        with task_failures():
            result = rewind(self.pipeline_clients(), to_batch=to_batch, execute=not dry_run)
        return self.present(context, result)


class AlignGroupOffsetsOperator(EosUseCaseOperator):
    """Commit the checkpoint's last committed batch ``offsets/C`` with marker ``C`` to the sink group.

    The repair for ``NO_MARKER``; a no-op on ``IN_SYNC``; refused for the other verdicts unless
    ``force`` (aligning then loses or duplicates output). Dry run by default: logs the
    before/after table and changes nothing. With ``dry_run=False`` it commits, then verifies
    again and fails when the group still disagrees. The group must have no active members (stop
    the job first). Returns the plan's data plus ``executed``, ``verdict_after`` and ``after``.

    :param dry_run: only plan. (templated)
    :param force: align despite a verdict that makes aligning lose or duplicate output. (templated)
    :param max_table_rows: partitions shown in the log table (the XCom holds all).
    """

    template_fields: Sequence[str] = (*EosUseCaseOperator.template_fields, "dry_run", "force")
    ui_color = _RECOVERY_COLOR

    def __init__(
        self, *, dry_run: bool | str = True, force: bool | str = False, max_table_rows: int = 100, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.dry_run = dry_run
        self.force = force
        self.max_table_rows = max_table_rows

    def execute(self, context: Context) -> dict[str, Any]:
        """Plan (and unless dry-running, commit) the alignment; return the plan and outcome."""
        from airflow_provider_eos.usecases.align import align

        dry_run = as_bool(self.dry_run, "dry_run")
        force = as_bool(self.force, "force")
        with task_failures():
            result = align(self.pipeline_clients(), execute=not dry_run, force=force)
        return self.present(context, result, max_rows=self.max_table_rows)
