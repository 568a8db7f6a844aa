"""The sink group's state and live members as pre-flight reads them: over kafka-python's DescribeGroups.

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
from airflow_provider_eos.kafka.group_offset_fetch import COORDINATOR_NOT_READY, forget_coordinator
from airflow_provider_eos.kafka.retriable import COORDINATOR_LOADING, CoordinatorNotReady
from airflow_provider_eos.kafka.transactions_admin import answered_within, raise_if_no_answer

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient

__all__ = ["GroupDescriptionError", "describe_group"]

#: DescribeGroups v1 (Kafka 0.10+) is enough for the state and members; later versions add what this read ignores.
_DESCRIBE_GROUPS_VERSION = 1


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
    from kafka.errors import KafkaError as KafkaPythonError
    from kafka.errors import for_code

    what = f"DescribeGroups({group_id!r})"
    refused = {ResourceType.GROUP: [group_id]}

    def attempt() -> Any:
        try:
            response = answered_within(admin, what, admin._manager.run, _describe, admin, group_id)
        except KafkaPythonError as exc:
            raise_if_no_answer(admin, what, exc)
            raise_if_refused(exc, "DescribeGroups", refused)
            if getattr(exc, "errno", None) in COORDINATOR_NOT_READY:
                forget_coordinator(admin, group_id)
                raise CoordinatorNotReady(f"{what}: {type(exc).__name__}") from exc
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

    group = COORDINATOR_LOADING.bounded(timeout_s=timeout_s).call(attempt, what=what)
    members = tuple(f"{m.client_id} on {m.client_host.lstrip('/')} (member {m.member_id})" for m in group.members)
    # Kafka's wire names are "Stable", "PreparingRebalance"...; librdkafka's enum, which the rules quote, upper-cased.
    return group.group_state.upper().replace("PREPARINGREBALANCE", "PREPARING_REBALANCE").replace(
        "COMPLETINGREBALANCE", "COMPLETING_REBALANCE"), members


async def _describe(admin: KafkaAdminClient, group_id: str) -> Any:
    from kafka.protocol.admin import DescribeGroupsRequest

    request = DescribeGroupsRequest(groups=[group_id], include_authorized_operations=False,
                                    min_version=_DESCRIBE_GROUPS_VERSION, max_version=5)
    coordinator = await admin._find_coordinator_id(group_id)
    return await admin._manager.send(request, node_id=coordinator)
