"""Recovery tasks (docs/architecture.md, recovery): abort open transactions, verify, rewind, align.

Each operator calls the use case ``eos abort``, ``eos verify``, ``eos repair rewind`` and ``eos
repair align`` call (:mod:`airflow_provider_eos.usecases`), logs its text and returns its data
(XCom); the outcome decides the task's state as
:mod:`airflow_provider_eos.operators.use_case` describes: a finding (a verdict that needs a
repair, transactions left open, a group that still disagrees after align) fails the task
without retrying, after pushing the data.

Each shows its result as a card in the task's ``result`` field ("Rendered Templates" tab, see
:mod:`airflow_provider_eos.operators.use_case`): the verdict table, what a dry run would change,
why an abort was refused. :class:`RefuseRecoveryRequestOperator` is where ``eos_manual_recovery``
goes with a request it refuses: it states the reason and succeeds, because nothing ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_provider_eos.core.presentation import (
    DEFAULT_MAX_ROWS,
    abort_card,
    align_card,
    refusal_card,
    rewind_card,
    verification_card,
)
from airflow_provider_eos.core.recovery_request import decide
from airflow_provider_eos.operators.use_case import (
    EosUseCaseOperator,
    ResultFieldMixin,
    as_batch,
    as_bool,
    as_fingerprint,
    card_budget,
    heading_of,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_eos.usecases.abort import AbortOutcome
    from airflow_provider_eos.usecases.align import AlignOutcome
    from airflow_provider_eos.usecases.result import UseCaseResult
    from airflow_provider_eos.usecases.rewind import RewindOutcome
    from airflow_provider_eos.usecases.verify import VerifyResult

__all__ = [
    "AbortOpenTransactionsOperator",
    "AlignGroupOffsetsOperator",
    "RefuseRecoveryRequestOperator",
    "RewindCheckpointOperator",
    "VerifyCommittedOffsetsOperator",
]

_RECOVERY_COLOR = "#fde2c4"


class AbortOpenTransactionsOperator(EosUseCaseOperator):
    """Abort the pipeline's lingering and hanging transactions (those under its transactional id prefix).

    Run it after a failure and before restarting the job, so ``read_committed`` consumers of the
    output move on. Logs the report's table and returns its data (XCom); fails when a
    transaction under the prefix is left open (after aborting, or found by a dry run). A dry run
    unless ``dry_run=False``, as the rewind and align operators and ``eos abort`` (``--execute``).

    :param force: act even if the job looks alive (a recent checkpoint commit, or an ongoing
        transaction younger than its timeout); fencing then breaks a live job's next commit.
        (templated)
    :param dry_run: only report what would be aborted (the default); ``False`` aborts. (templated)
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
        dry_run: bool | str = True,
        driver_gone_task_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.force = force
        self.dry_run = dry_run
        self.driver_gone_task_id = driver_gone_task_id
        self._dry_run = True

    def execute(self, context: Context) -> dict[str, Any]:
        """Scan, abort unless dry-running, rescan; return the report."""
        from airflow_provider_eos.usecases.abort import abort

        force = as_bool(self.force, "force")
        dry_run = as_bool(self.dry_run, "dry_run")
        self._dry_run = dry_run
        with self.use_case_failures("abort"):
            evidence = self._driver_gone_evidence(context)
            result = abort(self.pipeline_clients(), force=force, execute=not dry_run, driver_gone=evidence)
        return self.present(context, result)

    def card(self, result: UseCaseResult[Any], *, max_rows: int | None) -> str:
        """The open transactions and what was (or would be) done with each."""
        outcome: AbortOutcome = result  # type: ignore[assignment]
        return abort_card(heading_of(outcome, dry_run=self._dry_run), outcome.report, max_chars=card_budget())

    def _driver_gone_evidence(self, context: Context) -> str | None:
        if self.driver_gone_task_id is None:
            return None
        # common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
        from airflow.providers.common.compat.sdk import AirflowFailException

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

        with self.use_case_failures("verify"):
            result = verify(self.pipeline_clients())
        return self.present(context, result, max_rows=self.max_table_rows, hint=_airflow_hint(result))

    def card(self, result: UseCaseResult[Any], *, max_rows: int | None) -> str:
        """The verdict table (partition, checkpoint offset, group offset, marker, verdict), worst first."""
        verified: VerifyResult = result  # type: ignore[assignment]
        return verification_card(heading_of(verified), verified.report, max_rows=_card_rows(max_rows),
                                 max_chars=card_budget())


def _card_rows(max_rows: int | None) -> int:
    return DEFAULT_MAX_ROWS if max_rows is None else min(max_rows, DEFAULT_MAX_ROWS)


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

    The repair for ``KAFKA_BEHIND``. Dry run by default: logs the before/after table, the files
    that would move and the plan's fingerprint, changes nothing. With ``dry_run=False`` the files
    move into ``<checkpoint>.eos-backup-<UTC time>/`` next to the checkpoint (nothing is
    deleted); stop the job first: executing is refused while the pipeline looks alive unless
    ``force``. Returns the result's data.

    :param to_batch: the batch to rewind to (``-1``: before the first batch). ``None`` (or an
        empty rendered template) runs the verification and takes the batch it names, failing
        when the verdict is not ``KAFKA_BEHIND``. (templated)
    :param dry_run: only plan. (templated)
    :param force: execute even though the pipeline looks alive (a recent checkpoint commit, a young
        transaction under the prefix). (templated)
    :param expected_plan: the plan fingerprint the dry run showed; executing then refuses any
        other plan. Empty: not checked. (templated)
    """

    template_fields: Sequence[str] = (
        *EosUseCaseOperator.template_fields, "to_batch", "dry_run", "force", "expected_plan"
    )
    ui_color = _RECOVERY_COLOR

    def __init__(
        self,
        *,
        to_batch: int | str | None = None,
        dry_run: bool | str = True,
        force: bool | str = False,
        expected_plan: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.to_batch = to_batch
        self.dry_run = dry_run
        self.force = force
        self.expected_plan = expected_plan
        self._dry_run = True

    def execute(self, context: Context) -> dict[str, Any]:
        """Plan (and unless dry-running, execute) the rewind; return the result."""
        from airflow_provider_eos.usecases.rewind import rewind

        dry_run = as_bool(self.dry_run, "dry_run")
        force = as_bool(self.force, "force")
        to_batch = as_batch(self.to_batch, "to_batch")
        self._dry_run = dry_run
        with self.use_case_failures("rewind"):
            result = rewind(self.pipeline_clients(), to_batch=to_batch, execute=not dry_run, force=force,
                            expected_plan=as_fingerprint(self.expected_plan))
        return self.present(context, result)

    def card(self, result: UseCaseResult[Any], *, max_rows: int | None) -> str:
        """The checkpoint's batches before and after, and the files that move."""
        outcome: RewindOutcome = result  # type: ignore[assignment]
        return rewind_card(heading_of(outcome, dry_run=self._dry_run and not outcome.report.is_noop),
                           outcome.report, max_chars=card_budget())


class AlignGroupOffsetsOperator(EosUseCaseOperator):
    """Commit the checkpoint's last committed batch ``offsets/C`` with marker ``C`` to the sink group.

    The repair for ``NO_MARKER``; a no-op on ``IN_SYNC``; refused for the other verdicts unless
    ``force`` (aligning then loses or duplicates output), and, when the batch in flight's offsets may
    have expired, unless ``in_flight_batch`` says what the output topic shows of it. Dry run by default: logs the
    before/after table and the plan's fingerprint, and changes nothing. With ``dry_run=False`` it
    commits, then verifies again and fails when the group still disagrees; committing is refused
    while the pipeline looks alive unless ``force``. The group must have no active members (stop
    the job first). Returns the plan's data plus ``executed``, ``verdict_after``, ``after`` and
    ``safety``.

    :param dry_run: only plan. (templated)
    :param force: align despite a verdict that makes aligning lose or duplicate output, and even
        though the pipeline looks alive. (templated)
    :param expected_plan: the plan fingerprint the dry run showed; committing then refuses any
        other plan. Empty: not checked. (templated)
    :param in_flight_batch: ``written`` or ``not-written``: what the output topic shows of the batch in
        flight when verification says its offsets may have expired; align refuses that case without it,
        ``force`` or not (docs/design-notes.md note 61). Empty: not told. (templated)
    :param max_table_rows: partitions shown in the log table (the XCom holds all).
    """

    template_fields: Sequence[str] = (
        *EosUseCaseOperator.template_fields, "dry_run", "force", "expected_plan", "in_flight_batch",
    )
    ui_color = _RECOVERY_COLOR

    def __init__(
        self,
        *,
        dry_run: bool | str = True,
        force: bool | str = False,
        expected_plan: str | None = None,
        in_flight_batch: str | None = None,
        max_table_rows: int = 100,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.dry_run = dry_run
        self.force = force
        self.expected_plan = expected_plan
        self.in_flight_batch = in_flight_batch
        self.max_table_rows = max_table_rows

    def execute(self, context: Context) -> dict[str, Any]:
        """Plan (and unless dry-running, commit) the alignment; return the plan and outcome."""
        from airflow_provider_eos.usecases.align import align

        dry_run = as_bool(self.dry_run, "dry_run")
        force = as_bool(self.force, "force")
        with self.use_case_failures("align"):
            result = align(self.pipeline_clients(), execute=not dry_run, force=force,
                           expected_plan=as_fingerprint(self.expected_plan), in_flight_batch=self.in_flight_batch)
        return self.present(context, result, max_rows=self.max_table_rows)

    def card(self, result: UseCaseResult[Any], *, max_rows: int | None) -> str:
        """The group's offsets and markers before and after, then the verdict read back."""
        outcome: AlignOutcome = result  # type: ignore[assignment]
        heading = heading_of(outcome, dry_run=not outcome.executed and not outcome.report.is_noop)
        return align_card(heading, outcome.report, outcome.after, executed=outcome.executed,
                          max_rows=_card_rows(max_rows), max_chars=card_budget())


class RefuseRecoveryRequestOperator(ResultFieldMixin, BaseOperator):
    """Where a refused on-call request ends: one log line with the reason, the reason as the result, success.

    It reads the run's params as the ``eos_manual_recovery`` form names them (``pipeline``,
    ``action``, ``dry_run``, ``target_batch``, ``force``, ``expected_plan``, ``in_flight_batch``,
    ``confirmation``) and the same rules
    as the form's branch (:func:`~airflow_provider_eos.core.recovery_request.decide`). A refusal
    is the form working, not an incident: nothing ran and nothing changed, so the task succeeds
    (no failure alert, not among failed task logs) while every action task is skipped. The
    reason is the one line of its log, its ``result`` field and its XCom ``return_value``.

    :param pipelines: the pipelines that have a spec (the form's choices).
    """

    template_fields: Sequence[str] = ("result",)
    ui_color = "#f8d7da"

    def __init__(self, *, pipelines: Sequence[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pipelines = list(pipelines)
        self.result = ""

    def execute(self, context: Context) -> str:
        """Log the reason in one line and return it."""
        decision = decide(context["params"], self.pipelines)
        reason = decision.reason or "the branch chose this task, yet the request passes the form's rules now"
        self.log.warning("Refused, nothing was changed: %s", reason)
        self.result = refusal_card(str(decision.action or "request"), str(decision.pipeline or "?"), reason,
                                   phrase=decision.phrase)
        return reason
