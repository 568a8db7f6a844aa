"""The sink group as pre-flight reads it (state, live members, the principal's operations): over kafka-python.

librdkafka's DescribeConsumerGroups is a coordinator-targeted admin request like its
ListConsumerGroupOffsets, and 2.16 aborts the whole process when such a request loses its connection
(confluentinc/librdkafka issue 4605, design notes 83 and 87). Pre-flight runs in a worker's task, in
front of a pipeline start that may follow a broker's trouble: kafka-python's lost connection is an
exception instead, typed here as the package types every kafka-python call's (no answer, a refusal, a
coordinator still loading). The group's own read of its offsets is :mod:`.group_offset_fetch`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.acls import ResourceType
from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.kafka.denials import raise_if_refused
from airflow_provider_eos.kafka.group_offset_fetch import (
    COORDINATOR_NOT_READY,
    forget_coordinator,
    raise_coordinator_request_error,
)
from airflow_provider_eos.kafka.retriable import COORDINATOR_LOADING, CoordinatorNotReady
from airflow_provider_eos.kafka.transactions_admin import answered_within

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient

__all__ = ["GroupDescriptionError", "describe_group", "group_authorized_operations"]

#: DescribeGroups v1 (Kafka 0.10+) is enough for the state and members; later versions add what this read ignores.
_DESCRIBE_GROUPS_VERSION = 1
#: The first version that lists the caller's authorized operations (KIP-430, Kafka 2.3).
_WITH_OPERATIONS = 3
#: librdkafka's enum names (which the pre-flight rules quote) of the states Kafka's wire spells in two words run
#: together; every other state is the wire's name upper-cased ("Stable" is STABLE).
_LIBRDKAFKA_STATES = {"PreparingRebalance": "PREPARING_REBALANCE", "CompletingRebalance": "COMPLETING_REBALANCE"}


class GroupDescriptionError(EosError):
    """The group's description came back with an error no retry changes."""


def describe_group(admin: KafkaAdminClient, group_id: str, *, timeout_s: float) -> tuple[str, tuple[str, ...]]:
    """The group's state (``EMPTY``, ``STABLE``, ``DEAD`` ..., as librdkafka names them) and its live members,
    each described for people: ``client id on host (member id)``.

    :param admin: a connected kafka-python admin client
        (:func:`~airflow_provider_eos.kafka.transactions_admin.admin_client`).
    :param timeout_s: how long a coordinator that is loading the group (a fresh broker) is waited for.
    :raises KafkaNoAnswerError: no broker answered within the call's deadline (retryable).
    :raises AclMissingError: the principal may not describe the group.
    :raises RetryExhaustedError: the coordinator was still loading the group after ``timeout_s``.
    :raises GroupDescriptionError: the answer carried another error.
    """
    group = _described(admin, group_id, timeout_s=timeout_s, authorized_operations=False)
    members = tuple(f"{m.client_id} on {m.client_host.lstrip('/')} (member {m.member_id})" for m in group.members)
    return _LIBRDKAFKA_STATES.get(group.group_state, group.group_state.upper()), members


def group_authorized_operations(admin: KafkaAdminClient, group_id: str, *, timeout_s: float) -> set[str] | None:
    """The operations the caller may perform on the group, as the broker lists them (implied ones included; a group
    that does not exist is described as ``DEAD`` with them): Kafka's ACL operation names (``READ``, ``DESCRIBE``).
    ``None`` when the answer lists none (a broker before Kafka 2.3). Raises as :func:`describe_group`.
    """
    from kafka.admin import ACLOperation

    # kafka-python decodes the answer's bit field into the set of its bits, None where the broker listed nothing.
    bits = _described(admin, group_id, timeout_s=timeout_s, authorized_operations=True).authorized_operations
    if bits is None:
        return None
    listed = {operation.value: operation.name for operation in ACLOperation}
    # Bits 0-2 are UNKNOWN, ANY and ALL: never an operation the broker grants.
    return {listed[bit] for bit in bits if bit > 2 and bit in listed}


def _described(admin: KafkaAdminClient, group_id: str, *, timeout_s: float, authorized_operations: bool) -> Any:
    """The group's entry of a DescribeGroups answer, a coordinator not ready asked again within ``timeout_s``."""
    from kafka.errors import KafkaError as KafkaPythonError
    from kafka.errors import for_code

    what = f"DescribeGroups({group_id!r})"
    refused = {ResourceType.GROUP: [group_id]}

    def attempt() -> Any:
        try:
            response = answered_within(admin, what, admin._manager.run, _describe, admin, group_id,
                                       authorized_operations)
        except KafkaPythonError as exc:
            raise_coordinator_request_error(admin, group_id, what, "DescribeGroups", refused, exc)
            raise GroupDescriptionError(f"{what} failed: {type(exc).__name__}: {exc}") from exc
        (group,) = [g for g in response.groups if g.group_id == group_id]
        if group.error_code in COORDINATOR_NOT_READY:
            forget_coordinator(admin, group_id)
            raise CoordinatorNotReady(f"{what}: {for_code(group.error_code).__name__}")
        if group.error_code:
            error = for_code(group.error_code)(group.error_message or "")
            raise_if_refused(error, "DescribeGroups", refused)
            raise GroupDescriptionError(f"{what} failed: {type(error).__name__}: {error}")
        return group

    return COORDINATOR_LOADING.bounded(timeout_s=timeout_s).call(attempt, what=what)


async def _describe(admin: KafkaAdminClient, group_id: str, authorized_operations: bool) -> Any:
    from kafka.protocol.admin import DescribeGroupsRequest

    request = DescribeGroupsRequest(groups=[group_id], include_authorized_operations=authorized_operations,
                                    min_version=_WITH_OPERATIONS if authorized_operations else _DESCRIBE_GROUPS_VERSION,
                                    max_version=5)
    coordinator = await admin._find_coordinator_id(group_id)
    return await admin._manager.send(request, node_id=coordinator)
