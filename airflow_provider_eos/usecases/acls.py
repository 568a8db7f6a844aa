"""ACLs: the least-privilege set of a role on a pipeline, printed, or applied as an administrator (DESIGN.md 9).

The set is :func:`airflow_provider_eos.core.acls.required_acls`; applying it goes through
:mod:`airflow_provider_eos.kafka.acls_admin` with the administrator's settings from a JSON file,
never the spec's ``kafka`` settings: the principal the set is for must not grant itself rights.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_eos.core.acls import AclError, AclSetReport, check_principal, check_role, required_acls
from airflow_provider_eos.usecases.result import Outcome, UseCaseResult

if TYPE_CHECKING:
    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["AclsOutcome", "acls"]


class AclsOutcome(UseCaseResult[AclSetReport]):
    """The role's ACL set (and what an apply changed); always ``ok`` once it ran."""


def acls(
    spec: PipelineSpec,
    principal: str,
    role: str,
    *,
    admin_config: str | Path | None = None,
    apply: bool = False,
    hanging_abort: bool = False,
    timeout_s: float = 30,
) -> AclsOutcome:
    """The ACLs ``principal`` needs as ``role`` on ``spec``; with ``apply``, create the missing ones.

    Applying is idempotent: bindings the cluster holds are left as they are and reported as present.

    :param admin_config: a JSON file of librdkafka settings of a principal that may create ACLs
        (``ALTER`` on the cluster); required with ``apply``.
    :param apply: create the set on the cluster; ``False`` only prints it.
    :param hanging_abort: recovery only: include the rights to abort hanging transactions
        (``ALTER`` on the cluster: an administrator's right; see :mod:`airflow_provider_eos.core.acls.roles`).
    :raises AclError: for a principal that is not ``User:NAME``, an unknown role, ``apply`` without
        a usable admin config, or a refused or unconfirmed apply.
    """
    check_principal(principal)
    checked_role = check_role(role)
    wanted = required_acls(spec, principal, checked_role, hanging_abort=hanging_abort)
    if admin_config is not None and not apply:
        raise AclError(f"--admin-config {str(admin_config)!r} was given without --apply",
                       fix="add --apply to create the ACLs, or drop --admin-config to only print them")
    if not apply:
        report = AclSetReport(pipeline=spec.name, principal=principal, role=checked_role, acls=tuple(wanted))
        return _outcome(spec, report, "Apply them as an administrator: add --apply --admin-config FILE.")
    if admin_config is None:
        raise AclError("--apply needs the administrator's settings",
                       fix="pass --admin-config FILE: a JSON object of librdkafka settings of a principal with ALTER "
                       "on the cluster (the secured devstack prints it as client.config=...), not the spec's")
    from airflow_provider_eos.kafka.acls_admin import acl_admin, apply_acls, load_admin_settings

    admin = acl_admin(load_admin_settings(admin_config))
    created, present = apply_acls(admin, wanted, timeout_s=timeout_s)
    report = AclSetReport(pipeline=spec.name, principal=principal, role=checked_role, acls=tuple(wanted),
                          applied=True, created=tuple(created), already_present=tuple(present))
    return _outcome(spec, report, "Nothing to do: the cluster holds every ACL of the set.")


def _outcome(spec: PipelineSpec, report: AclSetReport, next_step: str) -> AclsOutcome:
    return AclsOutcome(use_case="acls", pipeline=spec.name, outcome=Outcome.OK, summary=report.summary(),
                       next_step=next_step, report=report)
