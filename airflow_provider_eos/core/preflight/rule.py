"""The rule model: severities, statuses, a rule's outcome and finding, and the catalog registry.

A rule's *severity* is fixed in the catalog (a check may report a failure below it, never above);
its *status* per run is ``pass``, ``fail`` or ``not_checked``. Rule families register their checks
with :func:`rule`; the catalog (:mod:`airflow_provider_eos.core.preflight.catalog`) collects them in
code order.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_provider_eos.core.frozen_model import FrozenModel

if TYPE_CHECKING:
    from airflow_provider_eos.core.preflight.facts import PreflightFacts

__all__ = [
    "Check",
    "Finding",
    "Outcome",
    "Rule",
    "Severity",
    "Status",
    "failed",
    "not_checked",
    "passed",
    "registered_rules",
    "rule",
    "unknown",
]


class Severity(enum.StrEnum):
    """How bad a failed rule is: only ``ERROR`` fails the pre-flight."""

    ERROR = "ERROR"
    WARNING = "WARNING"
    INFO = "INFO"


class Status(enum.StrEnum):
    """The outcome of one rule in one run."""

    PASS = "pass"
    FAIL = "fail"
    NOT_CHECKED = "not_checked"


@dataclass(frozen=True)
class Outcome:
    """What a check found, before the rule adds its code, severity and default fix.

    :param status: pass, fail or not checked.
    :param message: what was found, naming the values.
    :param fix: a fix more specific than the rule's own (failures only).
    :param severity: a failure less severe than the rule's own (EOS201: an existing internal topic
        with fewer replicas than the brokers' factor still takes writes); never more severe.
    """

    status: Status
    message: str
    fix: str | None = None
    severity: Severity | None = None


def passed(message: str) -> Outcome:
    """The check passed; ``message`` names the values it compared."""
    return Outcome(Status.PASS, message)


def failed(message: str, fix: str | None = None, *, severity: Severity | None = None) -> Outcome:
    """The check failed; ``fix`` replaces the rule's fix when the values allow a precise one.

    :param severity: report this failure below the rule's severity (a higher one is ignored).
    """
    return Outcome(Status.FAIL, message, fix, severity)


def not_checked(message: str) -> Outcome:
    """The check could not run; ``message`` is shown as is and should start with "not checked"."""
    return Outcome(Status.NOT_CHECKED, message)


def unknown(facts: PreflightFacts, fact: str, what: str) -> Outcome:
    """Not checked because ``fact`` was not read, with the reason the gatherer recorded, if any."""
    reason = facts.unavailable.get(fact)
    return not_checked(f"not checked: {what} not read" + (f" ({reason})" if reason else ""))


Check = Callable[["PreflightFacts"], Outcome]

_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


class Finding(FrozenModel):
    """One rule's outcome: a row of the report.

    :param code: the rule's code.
    :param severity: the rule's severity.
    :param status: ``pass``, ``fail`` or ``not_checked``.
    :param title: what the rule checks.
    :param message: what was found, naming the values.
    :param fix: what to do (only for failures).
    """

    code: str
    severity: Severity
    status: Status
    title: str
    message: str
    fix: str | None = None

    @property
    def result(self) -> str:
        """The result as shown in the table: ``ok``, the severity of a failure, or ``not checked``."""
        if self.status is Status.PASS:
            return "ok"
        if self.status is Status.NOT_CHECKED:
            return "not checked"
        return self.severity.value


@dataclass(frozen=True)
class Rule:
    """One catalog entry.

    :param code: the stable code (``EOS104``).
    :param severity: what a failure means.
    :param title: what the rule checks, in a few words.
    :param fix: what to do when it fails (a failing check may give a more specific fix).
    :param check: the check itself.
    """

    code: str
    severity: Severity
    title: str
    fix: str
    check: Check = field(repr=False)

    def evaluate(self, facts: PreflightFacts) -> Finding:
        """Run the check on ``facts``."""
        outcome = self.check(facts)
        severity = self.severity
        if outcome.severity is not None and _RANK[outcome.severity] < _RANK[self.severity]:
            severity = outcome.severity
        # An INFO finding is a note, not something to fix.
        needs_fix = outcome.status is Status.FAIL and severity is not Severity.INFO
        return Finding(
            code=self.code,
            severity=severity,
            status=outcome.status,
            title=self.title,
            message=outcome.message,
            fix=(outcome.fix or self.fix) if needs_fix else None,
        )


_REGISTRY: dict[str, Rule] = {}


def rule(code: str, severity: Severity, title: str, fix: str) -> Callable[[Check], Check]:
    """Register a check in the catalog under ``code`` (codes are unique and never reused)."""

    def register(check: Check) -> Check:
        if code in _REGISTRY:
            raise ValueError(f"rule code {code} is registered twice")
        _REGISTRY[code] = Rule(code, severity, title, fix, check)
        return check

    return register


def registered_rules() -> tuple[Rule, ...]:
    """Every registered rule, in code order (the families must have been imported)."""
    return tuple(_REGISTRY[code] for code in sorted(_REGISTRY))
