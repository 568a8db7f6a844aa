"""Least privilege (docs/security.md): the ACLs each role needs on a pipeline, and whether a principal has them.

- :mod:`.acl`: one ACL (:class:`Acl`, Kafka's resource types, patterns and operations), the roles;
- :mod:`.roles`: :func:`required_acls`, the minimal set of each role, every ACL with its reason;
- :mod:`.permissions`: matching a principal's bindings or probe results against a set (pre-flight EOS5xx);
- :mod:`.report`: the set as ``eos acls`` prints it, and what an apply changed.

Pure: the ACLs are read, probed and applied by :mod:`airflow_provider_eos.kafka.acls_admin`.
"""

from __future__ import annotations

from airflow_provider_eos.core.acls.acl import (
    ANY_HOST,
    CLUSTER_RESOURCE_NAME,
    INTERNAL_TOPICS,
    ROLES,
    Acl,
    AclError,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    Role,
    check_principal,
    check_role,
)
from airflow_provider_eos.core.acls.permissions import (
    CheckMethod,
    PermissionFacts,
    PermissionVerdict,
    ProbeResult,
    covers,
    evaluate_permissions,
    is_secured,
    principal_of,
)
from airflow_provider_eos.core.acls.report import AclSetReport
from airflow_provider_eos.core.acls.roles import (
    covered_pipelines,
    id_patterns_overlap,
    required_acls,
    transactional_id_pattern,
)

__all__ = [
    "ANY_HOST",
    "CLUSTER_RESOURCE_NAME",
    "INTERNAL_TOPICS",
    "ROLES",
    "Acl",
    "AclError",
    "AclSetReport",
    "CheckMethod",
    "Operation",
    "PatternType",
    "Permission",
    "PermissionFacts",
    "PermissionVerdict",
    "ProbeResult",
    "ResourceType",
    "Role",
    "check_principal",
    "check_role",
    "covered_pipelines",
    "covers",
    "evaluate_permissions",
    "id_patterns_overlap",
    "is_secured",
    "principal_of",
    "required_acls",
    "transactional_id_pattern",
]
