"""Results as a terminal and a task log show them: plain text with fixed-width tables.

One function per report, ``<report>_text(report)`` (:mod:`.text_checks`: verification, health,
pre-flight, ACLs; :mod:`.text_recovery`: abort, align, rewind): the summary lines, the tables
(:func:`~.table.render_table`) and what to do next. :func:`report_text` picks the function of
any report; :func:`result_text` is a use case's result as ``eos`` prints it and the task logs it
(its notes, then its report). With thousands of partitions ``max_rows`` keeps the worst rows and
counts the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from airflow_provider_eos.core.acls.report import AclSetReport
from airflow_provider_eos.core.health.report import HealthReport
from airflow_provider_eos.core.preflight.report import PreflightReport
from airflow_provider_eos.core.presentation.text_checks import (
    acls_text,
    health_text,
    preflight_text,
    verification_text,
)
from airflow_provider_eos.core.presentation.text_recovery import (
    abort_text,
    align_plan_text,
    align_text,
    rewind_plan_text,
    rewind_text,
)
from airflow_provider_eos.core.repair.align import AlignPlan
from airflow_provider_eos.core.repair.rewind_execute import RewindResult
from airflow_provider_eos.core.repair.rewind_plan import RewindPlan
from airflow_provider_eos.core.transactions.abort_report import AbortReport
from airflow_provider_eos.core.verification.report import VerificationReport

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "AlignView",
    "ResultView",
    "report_text",
    "result_text",
]


class ResultView(Protocol):
    """What :func:`result_text` reads of a use case's result.

    :class:`~airflow_provider_eos.usecases.result.UseCaseResult` has it; the core imports no use case.
    """

    @property
    def notes(self) -> Sequence[str]: ...

    @property
    def report(self) -> Any: ...


class AlignView(ResultView, Protocol):
    """What :func:`result_text` reads of an align result besides the plan (``usecases.align.AlignOutcome``)."""

    @property
    def group_id(self) -> str: ...

    @property
    def executed(self) -> bool: ...

    @property
    def after(self) -> VerificationReport: ...


def result_text(result: ResultView, *, max_rows: int | None = None) -> str:
    """A use case's result as ``eos`` prints it and the task logs it: the notes, then the report's text.

    :param max_rows: the most partitions a table shows, worst first, where the report has such a
        table (verification, align); ``None``: all.
    """
    if isinstance(result.report, AlignPlan):
        align = cast("AlignView", result)
        body = align_text(align.report, align.after, group_id=align.group_id, executed=align.executed,
                          max_rows=max_rows)
    else:
        body = report_text(result.report, max_rows=max_rows)
    return "\n".join([*(f"Note: {note}" for note in result.notes), body])


def report_text(report: object, *, max_rows: int | None = None) -> str:
    """Any report as text: the function of its type above.

    :param max_rows: passed to the reports whose tables are cut (verification, align plan); the
        others show every row.
    :raises TypeError: for an object that is no report.
    """
    if isinstance(report, VerificationReport):
        return verification_text(report, max_rows=max_rows)
    if isinstance(report, AlignPlan):
        return align_plan_text(report, max_rows=max_rows)
    if isinstance(report, HealthReport):
        return health_text(report)
    if isinstance(report, AbortReport):
        return abort_text(report)
    if isinstance(report, PreflightReport):
        return preflight_text(report)
    if isinstance(report, AclSetReport):
        return acls_text(report)
    if isinstance(report, RewindPlan):
        return rewind_plan_text(report)
    if isinstance(report, RewindResult):
        return rewind_text(report)
    raise TypeError(f"no text form for {type(report).__name__}")
