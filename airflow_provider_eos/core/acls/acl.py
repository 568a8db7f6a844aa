"""One Kafka ACL as this package reasons about it: who may do what on which resource, and why.

Kafka's authorizer decides per (principal, host, resource, operation). The names here are
Kafka's own (``TOPIC``, ``TRANSACTIONAL_ID``, ``PREFIXED``, ``DESCRIBE_CONFIGS`` ...), so a row
printed by ``eos acls`` reads the same as ``kafka-acls.sh --list``. Only ``ALLOW`` bindings
are produced; the principal is always a user principal (``User:NAME``).
"""

from __future__ import annotations

import enum
from typing import Literal

from pydantic import field_validator

from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.frozen_model import FrozenModel

__all__ = [
    "ANY_HOST",
    "CLUSTER_RESOURCE_NAME",
    "INTERNAL_TOPICS",
    "ROLES",
    "Acl",
    "AclError",
    "Operation",
    "PatternType",
    "Permission",
    "ResourceType",
    "Role",
    "check_principal",
    "check_role",
]

#: The only resource name Kafka accepts for the cluster resource.
CLUSTER_RESOURCE_NAME = "kafka-cluster"
#: Kafka's internal topics whose replication pre-flight reads (EOS201, EOS204): the transaction log
#: and the groups' offsets. Topic ACLs name them literally like any topic.
INTERNAL_TOPICS = ("__transaction_state", "__consumer_offsets")
#: Every host: the job's executors run wherever the cluster manager puts them.
ANY_HOST = "*"

Role = Literal["job", "recovery", "health"]
#: The roles with a set of their own (docs/security.md).
ROLES: tuple[Role, ...] = ("job", "recovery", "health")


class AclError(EosError):
    """An ACL request that cannot be served: a bad principal, role or admin settings, or a refused change."""


class ResourceType(enum.StrEnum):
    """The Kafka resource types the pipeline's roles touch."""

    TOPIC = "TOPIC"
    GROUP = "GROUP"
    TRANSACTIONAL_ID = "TRANSACTIONAL_ID"
    CLUSTER = "CLUSTER"


class PatternType(enum.StrEnum):
    """How the resource name matches: exactly, or as a prefix of the names it covers."""

    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class Operation(enum.StrEnum):
    """Kafka's ACL operations (those a role may need, plus ``ALL`` for reading other grants)."""

    ALL = "ALL"
    READ = "READ"
    WRITE = "WRITE"
    CREATE = "CREATE"
    DELETE = "DELETE"
    ALTER = "ALTER"
    DESCRIBE = "DESCRIBE"
    CLUSTER_ACTION = "CLUSTER_ACTION"
    DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"
    ALTER_CONFIGS = "ALTER_CONFIGS"
    IDEMPOTENT_WRITE = "IDEMPOTENT_WRITE"


class Permission(enum.StrEnum):
    """Whether a binding allows or denies; the sets only ever allow."""

    ALLOW = "ALLOW"
    DENY = "DENY"


def check_principal(principal: str) -> str:
    """Return ``principal`` if it is one user's principal ``User:NAME``.

    ``User:*`` is refused: Kafka reads it as every principal, so a role's set (the recovery role's
    ``CLUSTER ALTER`` among them) would go to every authenticated user.

    :raises AclError: naming the value and the expected form.
    """
    kind, sep, name = principal.partition(":") if isinstance(principal, str) else ("", "", "")
    if kind != "User" or not sep or not name.strip() or name != name.strip():
        raise AclError(
            f"principal {principal!r} is not a user principal of the form 'User:NAME'",
            fix="pass the principal as Kafka names it, e.g. --principal User:orders-job (for SASL/SCRAM the "
            "NAME is the SASL username)",
        )
    if name == "*":
        raise AclError(
            f"principal {principal!r} is Kafka's wildcard: it names every principal, so the role's ACLs would "
            "allow every authenticated user",
            fix="name the one user the role is for, e.g. --principal User:orders-job",
        )
    return principal


def check_role(role: str) -> Role:
    """Return ``role`` if it is one of :data:`ROLES`.

    :raises AclError: naming the value and the roles there are.
    """
    if role not in ROLES:
        raise AclError(f"role {role!r} is unknown", fix=f"use one of: {', '.join(ROLES)}")
    return role  # type: ignore[return-value]


class Acl(FrozenModel):
    """One ACL binding, with the reason the role needs it.

    :param principal: ``User:NAME``.
    :param resource_type: topic, group, transactional id or the cluster.
    :param name: the resource name (``kafka-cluster`` for the cluster).
    :param pattern: ``LITERAL`` or ``PREFIXED``.
    :param operation: the operation allowed.
    :param permission: always ``ALLOW`` in the sets.
    :param host: always ``*``.
    :param why: which client call needs it (empty for bindings read back from a cluster).
    :param caution: what else the binding lets the principal do, where that is more than the role needs.
    """

    principal: str
    resource_type: ResourceType
    name: str
    pattern: PatternType = PatternType.LITERAL
    operation: Operation
    permission: Permission = Permission.ALLOW
    host: str = ANY_HOST
    why: str = ""
    caution: str | None = None

    @field_validator("principal")
    @classmethod
    def _check_principal(cls, value: str) -> str:
        # User:* (every user) is legal in bindings read back from a cluster.
        if value == "User:*":
            return value
        try:
            return check_principal(value)
        except AclError as err:
            raise ValueError(f"{err.message}; {err.fix}") from err

    @property
    def binding(self) -> tuple[str, ResourceType, str, PatternType, Operation, Permission, str]:
        """What Kafka stores: everything but the reason (two ACLs with equal bindings are one ACL)."""
        return (self.principal, self.resource_type, self.name, self.pattern, self.operation, self.permission,
                self.host)

    def describe(self) -> str:
        """``TOPIC orders (LITERAL) READ``: the binding as a person names it, without the principal."""
        return f"{self.resource_type.value} {self.name!r} ({self.pattern.value}) {self.operation.value}"
