"""Whether a principal holds the ACLs a role needs: from its bindings, or from probes of what it may do.

Two sources, gathered by :mod:`airflow_provider_eos.kafka.acls_admin`:

- ``describe_acls``: the principal may DescribeAcls (``DESCRIBE`` on the cluster), so its
  bindings (and those of ``User:*``) are read and matched here the way Kafka's authorizer
  matches them: ``LITERAL`` names exactly or the wildcard ``*``, ``PREFIXED`` by prefix,
  ``ALL`` covers every operation, ``READ``/``WRITE``/``DELETE``/``ALTER`` imply ``DESCRIBE``,
  ``ALTER_CONFIGS`` implies ``DESCRIBE_CONFIGS``, and a ``DENY`` wins over any ``ALLOW``;
- ``probe``: it may not, so harmless requests tell what it may do (authorized operations of
  topics and the group, DescribeConfigs, a transactional-id request the broker refuses before
  it looks at the id's state). Each required ACL then carries a :class:`ProbeResult`.

A binding missing from the ACLs can still be allowed (a super user, ``allow.everyone.if.no.acl.
found``): a probe that says "allowed" overrides the ACLs' "missing", so a check never fails a
principal the broker lets through.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_eos.core.acls.acl import ANY_HOST, Acl, Operation, PatternType, Permission
from airflow_provider_eos.core.frozen_model import FrozenModel

__all__ = [
    "CheckMethod",
    "PermissionFacts",
    "PermissionVerdict",
    "ProbeResult",
    "covers",
    "evaluate_permissions",
    "is_secured",
    "principal_of",
]

#: Operations a granted operation implies, as Kafka's authorizer applies them to ALLOW bindings.
_IMPLIED_BY: Mapping[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset({Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.ALTER_CONFIGS}),
}

#: SASL mechanisms whose principal is ``User:<sasl.username>`` under Kafka's default principal builder.
_USERNAME_MECHANISMS = frozenset({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})


class CheckMethod(enum.StrEnum):
    """How the principal's permissions were learned."""

    DESCRIBE_ACLS = "describe_acls"
    PROBE = "probe"
    NO_AUTHORIZER = "no_authorizer"

    @property
    def phrase(self) -> str:
        """How the method reads in a message."""
        return {
            CheckMethod.DESCRIBE_ACLS: "by describing the principal's ACLs",
            CheckMethod.PROBE: "by probing authorized operations, as the principal may not DescribeAcls",
            CheckMethod.NO_AUTHORIZER: "the brokers run no authorizer",
        }[self]


class ProbeResult(FrozenModel):
    """What a harmless request said about one required ACL.

    :param acl: the required ACL (its binding identifies it).
    :param allowed: ``True`` allowed, ``False`` refused, ``None`` the probe could not tell.
    :param evidence: the request and the broker's answer.
    """

    acl: Acl
    allowed: bool | None
    evidence: str


class PermissionFacts(FrozenModel):
    """What pre-flight learned about the job principal's permissions.

    :param principal: ``User:NAME``; ``None`` when the settings name none (then ``note`` says why).
    :param method: how the permissions were learned (``None`` without a principal).
    :param bindings: with ``describe_acls``, the ALLOW and DENY bindings of the principal and of ``User:*``.
    :param probes: the probe of each required ACL (with ``describe_acls`` only of those the ACLs lack).
    :param note: why there is no principal to check.
    :param secured: whether the settings authenticate at all (SASL or TLS); without, there is nothing to check.
    """

    principal: str | None
    method: CheckMethod | None = None
    bindings: tuple[Acl, ...] = ()
    probes: tuple[ProbeResult, ...] = ()
    note: str | None = None
    secured: bool = True


class PermissionVerdict(FrozenModel):
    """The required ACLs split by what is known about them.

    :param missing: required ACLs the principal lacks, each with the evidence.
    :param unverified: required ACLs nothing could confirm or refute, each with the reason.
    :param granted: how many required ACLs are confirmed.
    """

    missing: tuple[tuple[Acl, str], ...] = ()
    unverified: tuple[tuple[Acl, str], ...] = ()
    granted: int = 0


def is_secured(kafka: Mapping[str, Any]) -> bool:
    """Whether librdkafka settings authenticate the client (SASL or TLS): only then has it a principal of its own."""
    return str(kafka.get("security.protocol", "PLAINTEXT")).upper() != "PLAINTEXT"


def principal_of(kafka: Mapping[str, Any]) -> tuple[str | None, str]:
    """The principal Kafka authorizes a client with these librdkafka settings as, or ``None`` and why.

    :param kafka: librdkafka settings (the spec's ``kafka`` or an Airflow connection's).
    :return: ``(User:NAME, description)`` or ``(None, reason)``.
    """
    protocol = str(kafka.get("security.protocol", "PLAINTEXT")).upper()
    if not protocol.startswith("SASL"):
        if protocol == "SSL":
            return None, ("security.protocol is SSL: the principal is the client certificate's distinguished name, "
                          "which pre-flight cannot derive")
        return None, f"security.protocol is {protocol}: the cluster is not secured, there is no principal to check"
    mechanism = str(kafka.get("sasl.mechanism", kafka.get("sasl.mechanisms", "GSSAPI"))).upper()
    username = kafka.get("sasl.username")
    if mechanism not in _USERNAME_MECHANISMS:
        return None, f"sasl.mechanism is {mechanism}: its principal is mapped by the broker, pre-flight cannot name it"
    if not username:
        return None, f"sasl.mechanism is {mechanism} but sasl.username is not set"
    return f"User:{username}", f"{protocol} {mechanism} user {username!r}"


def name_matches(binding: Acl, name: str, pattern: PatternType = PatternType.LITERAL) -> bool:
    """Whether ``binding``'s resource pattern covers every name ``(name, pattern)`` stands for."""
    if binding.pattern is PatternType.LITERAL:
        return binding.name == "*" or (pattern is PatternType.LITERAL and binding.name == name)
    return name.startswith(binding.name)


def _names_overlap(binding: Acl, name: str, pattern: PatternType) -> bool:
    """Whether ``binding``'s resource pattern covers at least one name ``(name, pattern)`` stands for."""
    if binding.pattern is PatternType.LITERAL:
        return binding.name == "*" or binding.name == name or (
            pattern is PatternType.PREFIXED and binding.name.startswith(name))
    return name.startswith(binding.name) or (pattern is PatternType.PREFIXED and binding.name.startswith(name))


def _applies(binding: Acl, required: Acl) -> bool:
    return (binding.resource_type is required.resource_type and binding.host == ANY_HOST
            and binding.principal in (required.principal, "User:*"))


def covers(bindings: Iterable[Acl], required: Acl) -> bool:
    """Whether ``bindings`` allow ``required`` as Kafka's authorizer would (a matching DENY wins)."""
    allowed = False
    for binding in bindings:
        if binding.resource_type is not required.resource_type or binding.principal not in (
                required.principal, "User:*"):
            continue
        if binding.permission is Permission.DENY:
            # A DENY on any overlapping name from any host refuses at least some of what is required.
            if binding.operation in (required.operation, Operation.ALL) and _names_overlap(
                    binding, required.name, required.pattern):
                return False
            continue
        operation_ok = binding.operation in (required.operation, Operation.ALL) or (
            binding.operation in _IMPLIED_BY.get(required.operation, frozenset()))
        if operation_ok and _applies(binding, required) and name_matches(binding, required.name, required.pattern):
            allowed = True
    return allowed


def evaluate_permissions(facts: PermissionFacts, required: Iterable[Acl]) -> PermissionVerdict:
    """Split ``required`` into granted, missing and unverified with the evidence ``facts`` hold."""
    probes = {probe.acl.binding: probe for probe in facts.probes}
    missing: list[tuple[Acl, str]] = []
    unverified: list[tuple[Acl, str]] = []
    granted = 0
    for acl in required:
        probe = probes.get(acl.binding)
        if facts.method is CheckMethod.NO_AUTHORIZER or (probe is not None and probe.allowed):
            granted += 1
        elif facts.method is CheckMethod.DESCRIBE_ACLS:
            if covers(facts.bindings, acl):
                granted += 1
            else:
                evidence = "no ACL of the principal or of User:* allows it"
                missing.append((acl, evidence + (f"; probe: {probe.evidence}" if probe is not None else "")))
        elif probe is not None and probe.allowed is False:
            missing.append((acl, probe.evidence))
        else:
            unverified.append((acl, probe.evidence if probe is not None else "no probe answers for it"))
    return PermissionVerdict(missing=tuple(missing), unverified=tuple(unverified), granted=granted)
