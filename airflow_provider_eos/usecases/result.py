"""What every use case returns: the outcome, the core's report, and what to do next.

The shells read only this: the CLI prints its text
(:func:`airflow_provider_eos.core.presentation.result_text`) or, with ``--json``,
:meth:`UseCaseResult.data`, and exits with the outcome's code; an operator logs the same text,
shows the result's card, returns the same data as its XCom, and fails on a finding. A result is
data: its presentations live in :mod:`airflow_provider_eos.core.presentation`.
"""

from __future__ import annotations

import enum
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

__all__ = ["Outcome", "UseCaseResult"]

ReportT = TypeVar("ReportT")


class Outcome(enum.StrEnum):
    """How a use case ended; the CLI's exit code and the task's state follow from it.

    ``ERROR`` is never the outcome of a returned result: a use case that cannot run, or refuses
    to act, raises an :class:`~airflow_provider_eos.core.errors.EosError` carrying the message
    and the fix. The value exists so the shells name all three with one vocabulary.
    """

    #: Nothing needs doing (the CLI exits 0, the task succeeds).
    OK = "ok"
    #: The use case ran and found something that needs action (exit 1, the task fails without retrying).
    FINDING = "finding"
    #: The use case could not run or refused (exit 2, the task fails; retried if a retry can help).
    ERROR = "error"


class UseCaseResult(BaseModel, Generic[ReportT]):
    """The typed result of one use case over one pipeline.

    :param use_case: which use case ran (``verify``, ``abort`` ...).
    :param pipeline: the pipeline's name.
    :param outcome: :attr:`Outcome.OK` or :attr:`Outcome.FINDING`.
    :param summary: one line saying what was found or done, naming the values.
    :param next_step: what a person should do now (``Nothing to do: ...`` when nothing).
    :param report: the core's report object (its ``to_dict()`` is the machine-readable body).
    :param notes: things the use case noticed on the way, shown above the report.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    use_case: str
    pipeline: str
    outcome: Outcome
    summary: str
    next_step: str
    report: ReportT
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when nothing needs doing."""
        return self.outcome is Outcome.OK

    def details(self) -> dict[str, Any]:
        """The report's machine-readable body; use cases with more to say extend it."""
        body: dict[str, Any] = self.report.to_dict()  # type: ignore[attr-defined]
        return body

    def data(self) -> dict[str, Any]:
        """What ``--json`` prints and the operator returns (XCom): the report plus outcome and next step."""
        return {**self.details(), "pipeline": self.pipeline, "outcome": self.outcome.value, "next_step": self.next_step}
