"""EOS5xx: security and ACLs.

The principal the pipeline's Kafka settings authenticate as (``User:<sasl.username>``) must hold
every ACL of the job's set (:func:`~airflow_provider_eos.core.acls.required_acls`): otherwise the
job fails later, inside Spark or the sink, on the first request the broker refuses. The
principal's permissions are read by :mod:`airflow_provider_eos.kafka.acl_probes`: its ACLs
when it may describe them, else harmless probes; every message says which.
"""

from __future__ import annotations

from airflow_provider_eos.core.acls import (
    Acl,
    CheckMethod,
    PermissionFacts,
    PermissionVerdict,
    evaluate_permissions,
    required_acls,
)
from airflow_provider_eos.core.acls.denials import apply_command
from airflow_provider_eos.core.preflight.facts import PreflightFacts
from airflow_provider_eos.core.preflight.rule import Outcome, Severity, failed, not_checked, passed, rule, unknown

__all__: list[str] = []


def _checked(facts: PreflightFacts) -> tuple[PermissionFacts, str, PermissionVerdict] | Outcome:
    """The permissions, the principal and the verdict on the job's set; or why there is nothing to check."""
    permissions = facts.permissions
    if permissions is None:
        return unknown(facts, "permissions", "the principal's permissions were")
    if permissions.principal is None:
        note = permissions.note or "the kafka settings name no principal"
        # An unauthenticated client has no principal of its own to hold ACLs: nothing to check, nothing missing.
        return passed(f"nothing to check: {note}") if not permissions.secured else not_checked(f"not checked: {note}")
    principal = permissions.principal
    return permissions, principal, evaluate_permissions(permissions, required_acls(facts.spec, principal, "job"))


def _row(acl: Acl, evidence: str) -> str:
    return f"{acl.describe()} [{evidence}]"


@rule(
    "EOS501",
    Severity.ERROR,
    "the job's principal holds every ACL the job needs",
    "grant the job's ACL set as an administrator: " + apply_command("User:NAME", "job"),
)
def _job_acls(facts: PreflightFacts) -> Outcome:
    checked = _checked(facts)
    if isinstance(checked, Outcome):
        return checked
    permissions, principal, verdict = checked
    if permissions.method is CheckMethod.NO_AUTHORIZER:
        return passed(f"{principal}: {CheckMethod.NO_AUTHORIZER.phrase}, every request is allowed")
    method = permissions.method.phrase if permissions.method else "method unknown"
    if verdict.missing:
        missing = "; ".join(_row(acl, evidence) for acl, evidence in verdict.missing)
        return failed(
            f"{principal} lacks {len(verdict.missing)} ACL(s) the job needs (found {method}): {missing}",
            fix=f"grant them as an administrator: {apply_command(principal, 'job')} (prints the set and why each ACL "
            "is needed; without --apply it only prints)",
        )
    unverified = f"; {len(verdict.unverified)} could not be verified (EOS502)" if verdict.unverified else ""
    return passed(f"{principal} holds the {verdict.granted} ACL(s) the job needs (checked {method}){unverified}")


@rule(
    "EOS502",
    Severity.INFO,
    "every ACL the job needs could be verified",
    "create the missing topics, or let the job's principal DescribeAcls (DESCRIBE on the cluster) so its ACLs "
    "can be read instead of probed",
)
def _job_acls_verified(facts: PreflightFacts) -> Outcome:
    checked = _checked(facts)
    if isinstance(checked, Outcome):
        return checked
    _, principal, verdict = checked
    if verdict.unverified:
        rows = "; ".join(_row(acl, evidence) for acl, evidence in verdict.unverified)
        return failed(f"{principal}: {len(verdict.unverified)} ACL(s) could neither be confirmed nor refuted: {rows}")
    return passed(f"{principal}: every ACL of the job's set was confirmed or refuted")
