"""ACLs: the least-privilege set of a role on a pipeline, printed, or applied as an administrator (docs/security.md).

The set is :func:`airflow_provider_eos.core.acls.required_acls`; applying it goes through
:mod:`airflow_provider_eos.kafka.acls_admin` with the administrator's settings from a JSON file,
never the spec's ``kafka`` settings: the principal the set is for must not grant itself rights.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_eos.core.acls import (
    AclError,
    AclSetReport,
    check_principal,
    check_role,
    covered_pipelines,
    required_acls,
    transactional_id_pattern,
)
from airflow_provider_eos.core.presentation import acls_summary
from airflow_provider_eos.kafka.reachability import DEFAULT_CONNECT_TIMEOUT_S
from airflow_provider_eos.usecases.result import Outcome, UseCaseResult

if TYPE_CHECKING:
    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["AclsOutcome", "acls"]


class AclsOutcome(UseCaseResult[AclSetReport]):
    """The role's ACL set (and what an apply changed); a finding when it covers another pipeline's ids."""


def _overlap_warnings(spec: PipelineSpec, principal: str, others: Iterable[PipelineSpec]) -> tuple[str, ...]:
    """One warning per direction in which a PREFIXED transactional-id pattern reaches the other pipeline."""
    mine = transactional_id_pattern(spec)
    nested = covered_pipelines(spec, others)
    covered = [o for o in nested if transactional_id_pattern(o).startswith(mine)]
    covering = [o for o in nested if o not in covered]
    fix = "give the pipelines transactional_id_prefix values where neither '<prefix>-' begins the other (pre-flight " \
          "EOS408 refuses them too)"
    warnings = []
    if covered:
        names = ", ".join(f"{o.name} (prefix {o.transactional_id_prefix!r})" for o in covered)
        warnings.append(f"the PREFIXED {mine!r} also covers the transactional ids of pipeline(s) {names}: "
                        f"{principal} could fence their transactions; {fix}")
    for other in covering:
        warnings.append(f"pipeline {other.name}'s PREFIXED {transactional_id_pattern(other)!r} also covers this "
                        f"pipeline's ids ({mine!r}): its principal could fence this pipeline's transactions; {fix}")
    return tuple(warnings)


def acls(  # noqa: PLR0913  # keyword-only options; the CLI and operator pass them by name
    spec: PipelineSpec,
    principal: str,
    role: str,
    *,
    admin_config: str | Path | None = None,
    apply: bool = False,
    hanging_abort: bool = False,
    broker_configs: bool = False,
    other_specs: Iterable[PipelineSpec] | None = None,
    timeout_s: float = 30,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
) -> AclsOutcome:
    """The ACLs ``principal`` needs as ``role`` on ``spec``; with ``apply``, create the missing ones.

    Applying is idempotent: bindings the cluster holds are left as they are and reported as present.
    A set whose ``PREFIXED`` transactional-id pattern overlaps another pipeline's (``orders-`` covers
    ``orders-eu-0``) is a finding when printed and is never applied.

    :param admin_config: a JSON file of librdkafka settings of a principal that may create ACLs
        (``ALTER`` on the cluster); required with ``apply``.
    :param apply: create the set on the cluster; ``False`` only prints it.
    :param hanging_abort: recovery only: include the rights to abort hanging transactions
        (``ALTER`` on the cluster: an administrator's right; see :mod:`airflow_provider_eos.core.acls.roles`).
    :param broker_configs: health only: include ``DESCRIBE_CONFIGS`` on the cluster, so that health reads the
        brokers' ``transaction.max.timeout.ms`` (see :mod:`airflow_provider_eos.core.acls.roles`).
    :param other_specs: the other known pipelines (the specs folder); ``None``: not checked.
    :param timeout_s: per admin request of the apply.
    :param connect_timeout_s: how long the apply waits for any broker to answer
        (:class:`~airflow_provider_eos.core.errors.KafkaUnreachableError` after that).
    :raises AclError: for a principal that is not ``User:NAME``, an unknown role, an option of another role
        (``hanging_abort``, ``broker_configs``), ``apply`` without
        a usable admin config, a set that covers another pipeline's ids with ``apply``, or a refused
        or unconfirmed apply.
    """
    check_principal(principal)
    checked_role = check_role(role)
    wanted = required_acls(spec, principal, checked_role, hanging_abort=hanging_abort,
                           broker_configs=broker_configs)
    if admin_config is not None and not apply:
        raise AclError(f"--admin-config {str(admin_config)!r} was given without --apply",
                       fix="add --apply to create the ACLs, or drop --admin-config to only print them")
    others = None if other_specs is None else tuple(o for o in other_specs if o.name != spec.name)
    warnings = () if others is None else _overlap_warnings(spec, principal, others)
    checked = {"warnings": warnings, "others_checked": None if others is None else len(others)}
    if warnings and apply:
        # Granting it would let this principal fence another pipeline: no --apply may do that.
        raise AclError(f"refusing to apply: {warnings[0]}",
                       fix="change the transactional_id_prefix of one of the specs so that neither '<prefix>-' "
                       "begins the other, then apply the set of each pipeline")
    if not apply:
        report = AclSetReport(pipeline=spec.name, principal=principal, role=checked_role, acls=tuple(wanted),
                              **checked)
        if warnings:
            return _outcome(spec, report, "Do not apply this set: rename the overlapping transactional_id_prefix "
                            "first (see the warning).", outcome=Outcome.FINDING)
        return _outcome(spec, report, "Apply them as an administrator: add --apply --admin-config FILE.")
    if admin_config is None:
        raise AclError("--apply needs the administrator's settings",
                       fix="pass --admin-config FILE: a JSON object of librdkafka settings of a principal with ALTER "
                       "on the cluster (the secured devstack prints it as client.config=...), not the spec's")
    from airflow_provider_eos.kafka.acls_admin import acl_admin, apply_acls, load_admin_settings

    # The same probe, and words, as every use case's first contact (PipelineClients.require_kafka).
    admin = acl_admin(load_admin_settings(admin_config), timeout_s=connect_timeout_s)
    created, present = apply_acls(admin, wanted, timeout_s=timeout_s)
    report = AclSetReport(pipeline=spec.name, principal=principal, role=checked_role, acls=tuple(wanted),
                          applied=True, created=tuple(created), already_present=tuple(present), **checked)
    return _outcome(spec, report, "Nothing to do: the cluster holds every ACL of the set.")


def _outcome(spec: PipelineSpec, report: AclSetReport, next_step: str, *, outcome: Outcome = Outcome.OK) -> AclsOutcome:
    return AclsOutcome(use_case="acls", pipeline=spec.name, outcome=outcome, summary=acls_summary(report),
                       next_step=next_step, report=report)
