"""Create, delete and describe ACLs through confluent-kafka's admin API, as an administrator.

The administrator's librdkafka settings come from a JSON file (the secured devstack's
``client.config`` is one), never from a pipeline spec: the job principal must not be able to
grant itself rights, so ``eos acls --apply`` authenticates as whoever the file names.
Creating a binding that exists is a no-op in Kafka; :func:`apply_acls` also reads the bindings
before and after, so it reports which were created and which were already there, and returns
only once the brokers show every one of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
)
from confluent_kafka.admin import ResourceType as KafkaResourceType

from airflow_provider_eos.core.acls import Acl, AclError, Operation, PatternType, Permission, ResourceType
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.kafka.reachability import DEFAULT_CONNECT_TIMEOUT_S, reachable_admin

__all__ = [
    "ACLS_VISIBLE",
    "NoAuthorizerError",
    "acl_admin",
    "apply_acls",
    "delete_acls",
    "describe_acls",
    "from_binding",
    "load_admin_settings",
    "to_binding",
]

# confluent-kafka calls the cluster resource type BROKER (Kafka's CLUSTER, code 4).
_RESOURCE_TYPES = {
    ResourceType.TOPIC: KafkaResourceType.TOPIC,
    ResourceType.GROUP: KafkaResourceType.GROUP,
    ResourceType.TRANSACTIONAL_ID: KafkaResourceType.TRANSACTIONAL_ID,
    ResourceType.CLUSTER: KafkaResourceType.BROKER,
}
_FROM_RESOURCE_TYPES = {kafka: ours for ours, kafka in _RESOURCE_TYPES.items()}

#: Waiting for created bindings to show in DescribeAcls (the metadata log reaches every broker).
ACLS_VISIBLE = RetryPolicy(waiting_for="the new ACLs to show on the brokers", timeout_s=15, first_delay_s=0.2,
                           max_delay_s=1.0)


class NoAuthorizerError(AclError):
    """The brokers run no authorizer (``SECURITY_DISABLED``): there are no ACLs to read or write."""


def load_admin_settings(path: str | Path) -> dict[str, Any]:
    """The librdkafka settings in the JSON file ``path`` (an object holding at least ``bootstrap.servers``).

    :raises AclError: naming the file when it is missing, unreadable, not JSON or not such an object.
    """
    file = Path(path)
    fix = ("pass --admin-config a JSON object of librdkafka settings of a principal that may create ACLs, e.g. the "
           "`client.config=` file `eos devstack up --security sasl_ssl` prints")
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AclError(f"admin config {str(file)!r} does not exist", fix=fix) from None
    except OSError as exc:
        raise AclError(f"admin config {str(file)!r} cannot be read: {exc.strerror or exc}", fix=fix) from None
    try:
        settings = json.loads(text)
    except json.JSONDecodeError as exc:
        # The position, not the text: the file holds a password.
        raise AclError(f"admin config {str(file)!r} is not JSON (line {exc.lineno}, column {exc.colno})",
                       fix=fix) from None
    if not isinstance(settings, dict) or not settings.get("bootstrap.servers"):
        raise AclError(f"admin config {str(file)!r} is not a JSON object with 'bootstrap.servers'", fix=fix)
    return settings


def acl_admin(settings: Mapping[str, Any], *, timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S) -> AdminClient:
    """A confluent-kafka admin client on ``settings`` (librdkafka keys), once a broker answered.

    :raises KafkaUnreachableError: no broker answered within ``timeout_s`` (the probe every use case runs).
    :raises KafkaLoginError: the cluster refused the administrator's login.
    """
    return reachable_admin("acl-admin", dict(settings), timeout_s=timeout_s)


def to_binding(acl: Acl) -> AclBinding:
    """``acl`` as confluent-kafka's :class:`AclBinding`."""
    return AclBinding(_RESOURCE_TYPES[acl.resource_type], acl.name, ResourcePatternType[acl.pattern.value],
                      acl.principal, acl.host, AclOperation[acl.operation.value],
                      AclPermissionType[acl.permission.value])


def from_binding(binding: AclBinding) -> Acl | None:
    """A binding read from the cluster as an :class:`Acl`; ``None`` for one of a kind no role uses."""
    try:
        return Acl(principal=binding.principal, resource_type=_FROM_RESOURCE_TYPES[binding.restype],
                   name=binding.name, pattern=PatternType(binding.resource_pattern_type.name),
                   operation=Operation(binding.operation.name), permission=Permission(binding.permission_type.name),
                   host=binding.host)
    except (KeyError, ValueError):
        # Delegation-token or user resources, other principal types: nothing a role set is matched against.
        return None


def _error_name(exc: KafkaException) -> str:
    error = exc.args[0] if exc.args else None
    return error.name() if isinstance(error, KafkaError) else str(exc)


def _refused(action: str, exc: KafkaException, settings_hint: str) -> AclError:
    name = _error_name(exc)
    if name == "CLUSTER_AUTHORIZATION_FAILED":
        return AclError(f"{action} was refused: {name}",
                        fix=f"{settings_hint} must name a principal with ALTER (create/delete) and DESCRIBE (list) "
                        "on the cluster, e.g. a super user")
    if name == "SECURITY_DISABLED":
        return NoAuthorizerError(f"{action} failed: the brokers run no authorizer ({name})",
                        fix="ACLs need a secured cluster with an authorizer (authorizer.class.name)")
    return AclError(f"{action} failed: {exc}", fix="check that the brokers are reachable with the admin settings")


def describe_acls(admin: AdminClient, principal: str | None = None, *, timeout_s: float = 30) -> list[Acl]:
    """Every binding (of ``principal`` only, if given) the cluster holds, in a stable order.

    A principal without DESCRIBE on the cluster gets an empty list from librdkafka, not an error:
    tell "may DescribeAcls" by the cluster's authorized operations first.

    :raises AclError: if the brokers refuse or cannot be reached.
    """
    flt = AclBindingFilter(KafkaResourceType.ANY, None, ResourcePatternType.ANY, principal, None, AclOperation.ANY,
                           AclPermissionType.ANY)
    try:
        found = admin.describe_acls(flt, request_timeout=timeout_s).result(timeout_s + 5)
    except KafkaException as exc:
        raise _refused(f"DescribeAcls{f' of {principal}' if principal else ''}", exc, "the settings") from exc
    acls = [acl for acl in map(from_binding, found) if acl is not None]
    return sorted(acls, key=lambda acl: acl.binding)


def apply_acls(admin: AdminClient, acls: Iterable[Acl], *, timeout_s: float = 30) -> tuple[list[Acl], list[Acl]]:
    """Create the bindings of ``acls`` that the cluster lacks and wait until all of them show.

    :returns: ``(created, already present)``, each in the order given.
    :raises AclError: if the administrator may not create ACLs, a binding is refused, or the
        bindings do not show within :data:`ACLS_VISIBLE`'s bound.
    """
    wanted = list(dict.fromkeys(acls))
    principals = sorted({acl.principal for acl in wanted})
    present = {acl.binding for principal in principals for acl in describe_acls(admin, principal, timeout_s=timeout_s)}
    missing = [acl for acl in wanted if acl.binding not in present]
    if missing:
        futures = admin.create_acls([to_binding(acl) for acl in missing], request_timeout=timeout_s)
        for binding, future in futures.items():
            try:
                future.result(timeout_s + 5)
            except KafkaException as exc:
                raise _refused(f"CreateAcls of {binding}", exc, "--admin-config") from exc

    def shown() -> set[tuple[Any, ...]]:
        return {acl.binding for principal in principals for acl in describe_acls(admin, principal, timeout_s=timeout_s)}

    settled = ACLS_VISIBLE.poll(shown, until=lambda found: all(a.binding in found for a in wanted),
                                what="read back the applied ACLs")
    if not settled.settled:
        absent = [acl.describe() for acl in wanted if acl.binding not in settled.value]
        raise AclError(f"the brokers do not show {len(absent)} applied ACL(s) after {settled.elapsed_s:.0f} s: "
                       + "; ".join(absent),
                       fix="run the command again (it is idempotent); if they stay absent, check the controller's log")
    return missing, [acl for acl in wanted if acl.binding in present]


def delete_acls(admin: AdminClient, acls: Iterable[Acl], *, timeout_s: float = 30) -> list[Acl]:
    """Delete exactly the bindings of ``acls`` (nothing they merely match); return those that existed.

    :raises AclError: if the administrator may not delete ACLs.
    """
    filters = [AclBindingFilter(_RESOURCE_TYPES[a.resource_type], a.name, ResourcePatternType[a.pattern.value],
                                a.principal, a.host, AclOperation[a.operation.value],
                                AclPermissionType[a.permission.value]) for a in acls]
    if not filters:
        return []
    deleted: list[Acl] = []
    for flt, future in admin.delete_acls(filters, request_timeout=timeout_s).items():
        try:
            deleted += [acl for acl in map(from_binding, future.result(timeout_s + 5)) if acl is not None]
        except KafkaException as exc:
            raise _refused(f"DeleteAcls of {flt}", exc, "the admin settings") from exc
    return deleted
