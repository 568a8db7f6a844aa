"""The pre-flight report: one finding per rule, its verdict and its JSON form.

A report is :attr:`~PreflightReport.ok` when no ``ERROR`` rule failed; warnings and infos are
reported, never fatal. ``model_dump(mode="json")`` is the operator's XCom value and
``eos preflight --json``; it adds the verdict (``ok`` and the codes per outcome) to the
fields, and :meth:`PreflightReport.model_validate` reads it back (the verdict is recomputed
from the findings, never trusted from the input).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, SerializerFunctionWrapHandler, model_serializer

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.preflight.rule import Finding, Severity, Status

__all__ = ["PreflightReport"]


class PreflightReport(FrozenModel):
    """The pre-flight of one pipeline: one finding per rule, in code order.

    :param pipeline: the pipeline's name.
    :param findings: the findings.
    """

    # The verdict keys of the dumped form are derived; reading a dump back ignores them.
    model_config = ConfigDict(extra="ignore")

    pipeline: str
    findings: tuple[Finding, ...]

    def _failed(self, severity: Severity) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status is Status.FAIL and f.severity is severity)

    @property
    def errors(self) -> tuple[Finding, ...]:
        """Failed ``ERROR`` rules: any of them fails the pre-flight."""
        return self._failed(Severity.ERROR)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        """Failed ``WARNING`` rules."""
        return self._failed(Severity.WARNING)

    @property
    def infos(self) -> tuple[Finding, ...]:
        """``INFO`` rules with something to say."""
        return self._failed(Severity.INFO)

    @property
    def not_checked(self) -> tuple[Finding, ...]:
        """Rules whose facts were not available."""
        return tuple(f for f in self.findings if f.status is Status.NOT_CHECKED)

    @property
    def ok(self) -> bool:
        """True when no ``ERROR`` rule failed (rules not checked do not count as failed)."""
        return not self.errors

    def finding(self, code: str) -> Finding:
        """The finding of rule ``code``.

        :raises KeyError: if no rule has that code.
        """
        for item in self.findings:
            if item.code == code:
                return item
        raise KeyError(code)

    @model_serializer(mode="wrap")
    def _with_verdict(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Readers (alerting, the CLI's --json users) look at the verdict and the codes per
        # outcome without walking the findings.
        fields = handler(self)
        return {
            "pipeline": fields["pipeline"],
            "ok": self.ok,
            "errors": [f.code for f in self.errors],
            "warnings": [f.code for f in self.warnings],
            "infos": [f.code for f in self.infos],
            "not_checked": [f.code for f in self.not_checked],
            "findings": fields["findings"],
        }
