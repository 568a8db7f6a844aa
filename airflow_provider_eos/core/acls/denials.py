"""A request the broker refused for want of an ACL, said as the ACL to grant and the command that grants it.

Kafka answers a request it does not authorize with one code per resource type
(``TOPIC_AUTHORIZATION_FAILED``, ``GROUP_...``, ``TRANSACTIONAL_ID_...``, ``CLUSTER_...``) and
never says which operation it checked. The caller knows the request it sent, and the broker
(``KafkaApis``) checks one operation per request and resource type: :data:`NEEDED` is that table,
the one place a refusal becomes "``OP`` on ``TYPE`` ``name``". :func:`acl_missing` builds the
:class:`~airflow_provider_eos.core.errors.AclMissingError` every call site raises (the Spark
source, the sink, the admin clients of recovery and health), and :func:`for_role` adds the fix
for the role whose task was refused, once the shell knows it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_eos.core.acls.acl import CLUSTER_RESOURCE_NAME, Acl, Operation, ResourceType, Role
from airflow_provider_eos.core.acls.permissions import name_matches, principal_of
from airflow_provider_eos.core.errors import AclMissingError

__all__ = [
    "AUTHORIZATION_CODES",
    "NEEDED",
    "acl_missing",
    "apply_command",
    "denied_resource_type",
    "for_role",
    "java_denial",
]

_T, _G, _X, _C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID, ResourceType.CLUSTER

#: ``(request, resource type) -> operation`` the broker checks (KafkaApis' handlers).
NEEDED: Mapping[tuple[str, ResourceType], Operation] = {
    ("Metadata", _T): Operation.DESCRIBE,
    ("ListOffsets", _T): Operation.DESCRIBE,
    ("Fetch", _T): Operation.READ,
    ("OffsetFetch", _G): Operation.DESCRIBE,
    ("OffsetFetch", _T): Operation.DESCRIBE,
    ("OffsetCommit", _G): Operation.READ,
    ("OffsetCommit", _T): Operation.READ,
    ("FindCoordinator", _G): Operation.DESCRIBE,
    ("FindCoordinator", _X): Operation.DESCRIBE,
    ("InitProducerId", _X): Operation.WRITE,
    ("AddPartitionsToTxn", _X): Operation.WRITE,
    ("AddPartitionsToTxn", _T): Operation.WRITE,
    ("Produce", _T): Operation.WRITE,
    ("Produce", _X): Operation.WRITE,
    ("AddOffsetsToTxn", _X): Operation.WRITE,
    ("AddOffsetsToTxn", _G): Operation.READ,
    ("TxnOffsetCommit", _G): Operation.READ,
    ("TxnOffsetCommit", _T): Operation.READ,
    ("TxnOffsetCommit", _X): Operation.WRITE,
    ("EndTxn", _X): Operation.WRITE,
    ("ListTransactions", _X): Operation.DESCRIBE,
    ("DescribeTransactions", _X): Operation.DESCRIBE,
    ("DescribeProducers", _T): Operation.READ,
    ("DescribeConfigs", _T): Operation.DESCRIBE_CONFIGS,
    ("DescribeConfigs", _C): Operation.DESCRIBE_CONFIGS,
    ("DescribeGroups", _G): Operation.DESCRIBE,
    ("WriteTxnMarkers", _C): Operation.ALTER,
    ("InitProducerId", _C): Operation.IDEMPOTENT_WRITE,
}

#: The authorization error codes, by the resource type they refuse.
AUTHORIZATION_CODES: Mapping[str, ResourceType] = {
    "TOPIC_AUTHORIZATION_FAILED": _T,
    "GROUP_AUTHORIZATION_FAILED": _G,
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": _X,
    "CLUSTER_AUTHORIZATION_FAILED": _C,
}

# The Java client's exceptions (Spark's source and writer): "Not authorized to access topics: [a, b]".
_JAVA = re.compile(
    r"(Topic|Group|TransactionalId|Cluster)AuthorizationException:\s*(?:Not authorized to access "
    r"(?:topics|group|the cluster)?:?\s*\[?(?P<names>[^\]\n]*)\]?)?",
)
_JAVA_TYPES = {"Topic": _T, "Group": _G, "TransactionalId": _X, "Cluster": _C}


def denied_resource_type(code: str) -> ResourceType | None:
    """The resource type an error code (``TOPIC_AUTHORIZATION_FAILED``...) refuses, or ``None`` if it is no refusal.

    Accepts the code's name in any case and the kafka-python spelling (``TopicAuthorizationFailedError``).
    """
    if code.upper() in AUTHORIZATION_CODES:
        return AUTHORIZATION_CODES[code.upper()]
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", code.removesuffix("Error")).upper()
    return AUTHORIZATION_CODES.get(snake)


def java_denial(text: str) -> tuple[ResourceType, tuple[str, ...]] | None:
    """The resource type and names a Java client's authorization exception in ``text`` refused, if any."""
    found = _JAVA.search(text)
    if found is None:
        return None
    names = tuple(n.strip() for n in (found.group("names") or "").split(",") if n.strip())
    return _JAVA_TYPES[found.group(1)], names


def apply_command(principal: str, role: Role | str, spec_ref: str = "FILE", *, options: Iterable[str] = ()) -> str:
    """The command an administrator runs to grant ``role``'s whole set to ``principal``.

    :param options: the role's opt-ins to grant too (``--broker-configs``, ``--hanging-abort``).
    """
    opted = "".join(f" {option}" for option in options)
    return (f"eos acls --spec {spec_ref} --principal {principal} --role {role}{opted} --apply "
            "--admin-config ADMIN_CONFIG.json")


def acl_missing(
    request: str,
    resource_type: ResourceType,
    names: Iterable[str],
    *,
    settings: Mapping[str, Any] | None = None,
    principal: str | None = None,
    detail: str = "",
) -> AclMissingError:
    """The error for ``request`` refused on ``names`` of ``resource_type``, naming the ACL it needs.

    :param request: the Kafka request refused (a key of :data:`NEEDED`, e.g. ``"TxnOffsetCommit"``).
    :param names: the resources the request named (the cluster needs none).
    :param settings: the client's librdkafka settings, to name the principal refused.
    :param principal: the principal refused, when the caller knows it without settings.
    :param detail: the client's own words, quoted.
    """
    operation = NEEDED.get((request, resource_type), Operation.DESCRIBE)
    listed = tuple(dict.fromkeys(names)) or ((CLUSTER_RESOURCE_NAME,) if resource_type is _C else ("?",))
    if principal is None and settings is not None:
        principal = principal_of(settings)[0]
    who = principal or "the client's principal"
    resources = ", ".join(f"{resource_type.value} {n!r}" for n in listed)
    implied = " (READ, WRITE or ALTER on it imply DESCRIBE)" if operation is Operation.DESCRIBE else ""
    return AclMissingError(
        f"Kafka refused {who} {request}: it needs {operation.value} on {resources}{implied}"
        + (f" ({detail})" if detail else ""),
        fix=f"an administrator grants {who} {operation.value} on {resources}; `eos acls --spec FILE --principal "
        f"{principal or 'User:NAME'} --role ROLE` prints each role's whole set and --apply creates it",
        request=request,
        resource_type=resource_type.value,
        resource_names=listed,
        operation=operation.value,
        principal=principal,
    )


def for_role(error: AclMissingError, role: Role | str, *, pipeline: str | None = None,
             settings: Mapping[str, Any] | None = None, role_acls: Iterable[Acl] = ()) -> AclMissingError:
    """``error`` with the fix of ``role``'s task: the command that grants the role's whole set.

    :param pipeline: the pipeline's name, so the fix names its spec.
    :param settings: the role's librdkafka settings, naming the principal when the error could not.
    :param role_acls: the role's set on the pipeline: the fix names its ACL on the refused resource
        (``READ`` where the refused request needed only the ``DESCRIBE`` it implies).
    """
    if error.role is not None:
        return error
    principal = error.principal or (principal_of(settings)[0] if settings is not None else None)
    covering = [a for a in role_acls if a.resource_type.value == error.resource_type
                and any(name_matches(a, n) for n in error.resource_names)]
    resources = ", ".join(f"{error.resource_type} {n!r}" for n in error.resource_names)
    if covering:
        resources = ", ".join(dict.fromkeys(
            f"{a.operation.value} on {a.resource_type.value} {a.name!r} ({a.pattern.value})" for a in covering))
    message = error.message if error.principal or principal is None else error.message.replace(
        "the client's principal", principal, 1)
    return type(error)(
        message,
        fix=f"an administrator grants the {role} role's ACLs (they include "
        f"{resources if covering else f'{error.operation} on {resources}'}): "
        f"`{apply_command(principal or 'User:NAME', role, 'FILE')}`, FILE being the spec of "
        f"{'the pipeline' if pipeline is None else repr(pipeline)}",
        request=error.request,
        resource_type=error.resource_type,
        resource_names=error.resource_names,
        operation=error.operation,
        principal=principal,
        role=str(role),
    )

