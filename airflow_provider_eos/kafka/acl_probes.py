"""What a principal may do, learned with its own credentials: its ACLs if it may read them, else harmless probes.

DescribeAcls needs DESCRIBE on the cluster, and librdkafka returns an empty list (no error)
when the broker refuses it, so the cluster's authorized operations decide first: they are only
reported to a principal with DESCRIBE on the cluster (:func:`read_permissions`).

The probes change nothing:

- topics and the group: DescribeTopics / DescribeGroups with ``include_authorized_operations``
  (the broker lists the operations the caller may perform, implied ones included; a group that
  does not exist is described as ``DEAD`` with them). The group's goes over kafka-python
  (:func:`~airflow_provider_eos.kafka.group_description.group_authorized_operations`): librdkafka's
  DescribeConsumerGroups aborts the process when its connection drops (design note 89);
- ``DESCRIBE_CONFIGS``: DescribeConfigs of a broker or the topic;
- transactional ids: ``WRITE`` by an EndTxn for an id under the prefix that no producer uses
  (``<prefix>-eos-acl-probe``, with producer id -1). Kafka checks ``WRITE`` on the id before it
  looks the id up, so the answer is ``TRANSACTIONAL_ID_AUTHORIZATION_FAILED`` or, authorized,
  an error about the unknown id (``NOT_COORDINATOR``, ``INVALID_PRODUCER_ID_MAPPING``); no
  transaction is opened, ended or fenced. ``DESCRIBE`` by DescribeTransactions of the same id.
  confluent-kafka has neither request; kafka-python sends them.

A probe that gets no answer (the broker unreachable or paused, a request timed out: kafka-python
raises its ``KafkaError``, which is no ``KafkaException``) neither confirms nor refutes the ACL: it
is reported as unverified with the client's error, like any failed probe, never as granted and
never as an exception out of :func:`read_permissions`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource
from confluent_kafka.admin import ResourceType as KafkaResourceType

from airflow_provider_eos.core.acls import (
    Acl,
    CheckMethod,
    Operation,
    PatternType,
    PermissionFacts,
    ProbeResult,
    ResourceType,
    covers,
)
from airflow_provider_eos.core.errors import AclMissingError, EosError
from airflow_provider_eos.kafka.acls_admin import NoAuthorizerError, describe_acls
from airflow_provider_eos.kafka.group_description import group_authorized_operations
from airflow_provider_eos.kafka.settings import kafka_python_can_take, with_client_logger

__all__ = ["PROBE_TRANSACTIONAL_ID_SUFFIX", "probe_transactional_id", "read_permissions"]

log = logging.getLogger(__name__)

#: Appended to a ``PREFIXED`` transactional-id pattern to get an id under it that no writer ever uses.
PROBE_TRANSACTIONAL_ID_SUFFIX = "eos-acl-probe"

_TXN_ID_AUTH_FAILED = 53  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def probe_transactional_id(acl: Acl) -> str:
    """The id a transactional-id probe asks about: one the ACL's pattern covers and no writer uses."""
    if acl.pattern is PatternType.PREFIXED:
        return acl.name + PROBE_TRANSACTIONAL_ID_SUFFIX
    return PROBE_TRANSACTIONAL_ID_SUFFIX if acl.name == "*" else acl.name


def _error_name(exc: BaseException) -> str:
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return error.name() if isinstance(error, KafkaError) else type(exc).__name__


def _kafka_python_error(exc: BaseException) -> str:
    """kafka-python's error as its class and words (``KafkaTimeoutError: Timed out after 5000 ms``)."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _Prober:
    """One principal's probes; each answer is cached per resource."""

    def __init__(self, librdkafka: Mapping[str, Any], timeout_s: float) -> None:
        self.librdkafka, self.timeout_s = dict(librdkafka), timeout_s
        self.admin = AdminClient(with_client_logger("acl-probe", self.librdkafka))
        self.brokers: list[int] = []
        self.cluster_operations: set[str] | None = None
        self._described: dict[tuple[ResourceType, str], tuple[set[str] | None, str]] = {}

    def describe_cluster(self) -> None:
        """Live brokers, and the cluster's authorized operations (``None`` without DESCRIBE on the cluster)."""
        result = self.admin.describe_cluster(include_authorized_operations=True,
                                             request_timeout=self.timeout_s).result(self.timeout_s + 5)
        self.brokers = sorted(node.id for node in result.nodes)
        ops = result.authorized_operations
        self.cluster_operations = None if ops is None else {op.name for op in ops}

    def probe(self, acl: Acl) -> ProbeResult:
        from kafka.errors import KafkaError as KafkaPythonError

        try:
            allowed, evidence = self._probe(acl)
        except (KafkaException, EosError, OSError, TimeoutError) as exc:
            allowed, evidence = None, f"the probe failed: {_error_name(exc)}"
        except KafkaPythonError as exc:  # the transactional-id probes' client, e.g. closing it on a lost broker
            allowed, evidence = None, f"the probe failed: {_kafka_python_error(exc)}"
        return ProbeResult(acl=acl, allowed=allowed, evidence=evidence)

    def _probe(self, acl: Acl) -> tuple[bool | None, str]:
        if acl.pattern is PatternType.PREFIXED and acl.resource_type is not ResourceType.TRANSACTIONAL_ID:
            return None, "prefixed topic and group patterns are not probed"
        if acl.resource_type is ResourceType.TRANSACTIONAL_ID:
            return self._transactional_id(acl)
        if acl.operation is Operation.DESCRIBE_CONFIGS:
            return self._describe_configs(acl)
        if acl.resource_type is ResourceType.CLUSTER:
            if self.cluster_operations is None:
                return None, "DescribeCluster reports the cluster's operations only to a principal with DESCRIBE on it"
            allowed = acl.operation.value in self.cluster_operations
            return allowed, f"DescribeCluster authorized operations: {', '.join(sorted(self.cluster_operations))}"
        operations, evidence = self._authorized_operations(acl.resource_type, acl.name)
        if operations is None:
            return (False if "AUTHORIZATION_FAILED" in evidence else None), evidence
        return acl.operation.value in operations, evidence

    def _authorized_operations(self, resource_type: ResourceType, name: str) -> tuple[set[str] | None, str]:
        key = (resource_type, name)
        if key not in self._described:
            self._described[key] = self._describe(resource_type, name)
        return self._described[key]

    def _describe(self, resource_type: ResourceType, name: str) -> tuple[set[str] | None, str]:
        t = self.timeout_s
        try:
            if resource_type is ResourceType.TOPIC:
                what = f"DescribeTopics({name})"
                future = self.admin.describe_topics(TopicCollection([name]), include_authorized_operations=True,
                                                    request_timeout=t)[name]
            elif kafka_python_can_take(self.librdkafka):
                return self._group_operations(name)
            else:  # settings kafka-python cannot take (SASL OAUTHBEARER): librdkafka's, as before note 89
                what = f"DescribeConsumerGroups({name})"
                future = self.admin.describe_consumer_groups([name], include_authorized_operations=True,
                                                             request_timeout=t)[name]
            ops = future.result(t + 5).authorized_operations
        except KafkaException as exc:
            return None, f"{what}: {_error_name(exc)}"
        names = {op.name for op in ops or ()}
        return names, f"{what} authorized operations: {', '.join(sorted(names)) or 'none'}"

    def _group_operations(self, name: str) -> tuple[set[str] | None, str]:
        """DescribeGroups over kafka-python: librdkafka's aborts the process when its connection drops (note 89)."""
        from airflow_provider_eos.kafka.transactions_admin import admin_client

        what = f"DescribeGroups({name})"
        try:
            with admin_client(self.librdkafka, timeout_ms=int(self.timeout_s * 1000)) as admin:
                names = group_authorized_operations(admin, name, timeout_s=self.timeout_s)
        except AclMissingError:
            return None, f"{what}: GROUP_AUTHORIZATION_FAILED"
        if names is None:
            return None, f"{what}: the broker lists no authorized operations"
        return names, f"{what} authorized operations: {', '.join(sorted(names)) or 'none'}"

    def _describe_configs(self, acl: Acl) -> tuple[bool | None, str]:
        if acl.resource_type is ResourceType.CLUSTER:
            if not self.brokers:
                return None, "no live broker to describe"
            resource = ConfigResource(KafkaResourceType.BROKER, str(self.brokers[0]))
        else:
            resource = ConfigResource(KafkaResourceType.TOPIC, acl.name)
        what = f"DescribeConfigs({resource.restype.name} {resource.name})"
        try:
            next(iter(self.admin.describe_configs([resource], request_timeout=self.timeout_s).values())).result(
                self.timeout_s + 5)
        except KafkaException as exc:
            name = _error_name(exc)
            if name.endswith("AUTHORIZATION_FAILED"):
                return False, f"{what}: {name}"
            # The broker checks the ACL before it looks for the topic: an unknown topic was authorized.
            return (True if name == "UNKNOWN_TOPIC_OR_PART" else None), f"{what}: {name}"
        return True, f"{what} answered"

    def _transactional_id(self, acl: Acl) -> tuple[bool | None, str]:
        from airflow_provider_eos.kafka.transactions_admin import admin_client

        txn_id = probe_transactional_id(acl)
        with admin_client(self.librdkafka, timeout_ms=int(self.timeout_s * 1000)) as admin:
            if acl.operation is Operation.WRITE:
                return _end_txn_probe(admin, txn_id)
            if acl.operation is Operation.DESCRIBE:
                return _describe_transaction_probe(admin, txn_id)
        return None, f"{acl.operation.value} on a transactional id is not probed"


def _end_txn_probe(admin: Any, txn_id: str) -> tuple[bool | None, str]:
    """``WRITE``: EndTxn(abort) of ``txn_id`` with producer id -1, refused before or after the ACL check."""
    from kafka.protocol.producer.transaction import EndTxnRequest

    request = EndTxnRequest(transactional_id=txn_id, producer_id=-1, producer_epoch=-1, committed=False)
    manager = getattr(admin, "_manager", None)
    if manager is None:  # kafka-python moved its connection manager: say so instead of guessing
        return None, "this kafka-python cannot send the EndTxn probe"

    async def send() -> Any:
        return await manager.send(request)

    from kafka.errors import KafkaError as KafkaPythonError

    from airflow_provider_eos.core.errors import KafkaNoAnswerError
    from airflow_provider_eos.kafka.transactions_admin import answered_within

    what = f"EndTxn({txn_id!r}, producer id -1)"
    try:
        code = answered_within(admin, what, manager.run, send).error_code
    except KafkaNoAnswerError as exc:
        # kafka-python's retries of the request went on past the deadline: still no answer.
        return None, f"{what}: no answer, {exc.message}"
    except KafkaPythonError as exc:
        # No response (the connection lost, the request timed out): the broker never said what it checked.
        return None, f"{what}: no answer, {_kafka_python_error(exc)}"
    if code == _TXN_ID_AUTH_FAILED:
        return False, f"{what}: TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    return True, f"{what}: error {code}, past the ACL check (nothing to end)"


def _describe_transaction_probe(admin: Any, txn_id: str) -> tuple[bool | None, str]:
    """``DESCRIBE``: DescribeTransactions of ``txn_id`` (its FindCoordinator checks DESCRIBE first)."""
    from kafka.errors import BrokerResponseError, TransactionalIdAuthorizationFailedError
    from kafka.errors import KafkaError as KafkaPythonError

    from airflow_provider_eos.core.errors import KafkaNoAnswerError
    from airflow_provider_eos.kafka.transactions_admin import answered_within

    what = f"DescribeTransactions({txn_id!r})"
    try:
        answered_within(admin, what, admin.describe_transactions, [txn_id])
    except KafkaNoAnswerError as exc:
        # kafka-python retries DescribeTransactions until the broker answers: the deadline ended the wait.
        return None, f"{what}: no answer, {exc.message}"
    except TransactionalIdAuthorizationFailedError:
        return False, f"{what}: TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    except KafkaPythonError as exc:
        # Only a broker's definite answer (TRANSACTIONAL_ID_NOT_FOUND for the unused id) comes after the ACL
        # check. kafka-python raises a retriable error for what got no answer, its own request timeout
        # included (a RequestTimedOutError, though a broker code too): that says nothing of the ACL.
        if isinstance(exc, BrokerResponseError) and not getattr(exc, "retriable", False):
            return True, f"{what}: {exc.message or type(exc).__name__}, past the ACL check"
        return None, f"{what}: no answer, {_kafka_python_error(exc)}"
    return True, f"{what} answered"


def read_permissions(librdkafka: Mapping[str, Any], principal: str, required: Iterable[Acl],
                     *, timeout_s: float = 30) -> PermissionFacts:
    """What ``principal`` (authenticated by ``librdkafka``) may do of ``required``.

    With DESCRIBE on the cluster its bindings and those of ``User:*`` are read, and the required
    ACLs they lack are probed as well (a super user holds no ACLs); otherwise every required ACL
    is probed.

    :raises KafkaException: if the cluster cannot be described at all.
    """
    wanted = list(required)
    prober = _Prober(librdkafka, timeout_s)
    prober.describe_cluster()
    if prober.cluster_operations is not None and "DESCRIBE" in prober.cluster_operations:
        try:
            bindings = tuple(acl for who in (principal, "User:*")
                             for acl in describe_acls(prober.admin, who, timeout_s=timeout_s))
        except NoAuthorizerError:
            return PermissionFacts(principal=principal, method=CheckMethod.NO_AUTHORIZER)
        lacking = [acl for acl in wanted if not covers(bindings, acl)]
        return PermissionFacts(principal=principal, method=CheckMethod.DESCRIBE_ACLS, bindings=bindings,
                               probes=tuple(prober.probe(acl) for acl in lacking))
    return PermissionFacts(principal=principal, method=CheckMethod.PROBE,
                           probes=tuple(prober.probe(acl) for acl in wanted))
