"""Kafka's own rule of which ACL each protocol request needs, written from Kafka's documentation.

Independent of the product's ACL table (``airflow_provider_eos/core/acls``): nothing here imports
it, so a test deriving a role's set from :data:`REQUEST_ACLS` checks the product against Kafka,
not against itself.

Sources:

- Apache Kafka documentation, Security -> Authorization and ACLs -> "Operations and Resources on
  Protocols" (https://kafka.apache.org/documentation/#operations_resources_and_protocols;
  ``docs/security.html`` in apache/kafka): the operation and resource type each request (API key)
  is authorized with. Each row below cites its API key.
- Where the table lists a request twice for two cases, or the broker accepts an alternative, the
  broker's code decides (``core/src/main/scala/kafka/server/KafkaApis.scala`` and
  ``AuthHelper.scala``); those rows say so.
- The implied operations: the javadoc of ``org.apache.kafka.common.acl.AclOperation`` ("ALLOW
  READ implies ALLOW DESCRIBE; ALLOW WRITE implies ALLOW DESCRIBE; ALLOW DELETE implies ALLOW
  DESCRIBE; ALLOW ALTER implies ALLOW DESCRIBE; ALLOW ALTER_CONFIGS implies ALLOW
  DESCRIBE_CONFIGS").

Operations and resource types are spelled as ``kafka-acls.sh`` prints them (``DESCRIBE_CONFIGS``,
``TRANSACTIONAL_ID``), plain strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "ANY_TOPIC",
    "CLUSTER",
    "IMPLIED_BY",
    "REQUEST_ACLS",
    "AnyOf",
    "Binding",
    "Call",
    "Resource",
    "derive",
    "needed_by",
]

#: The one name Kafka gives the cluster resource.
CLUSTER = "kafka-cluster"
#: "WRITE on any topic": an alternative of InitProducerId without a transactional id (KIP-679).
ANY_TOPIC = "<any topic>"

Need = tuple[str, str]  # (operation, resource type)


@dataclass(frozen=True)
class AnyOf:
    """The broker accepts any one of ``options`` (the first is the documented one)."""

    options: tuple[Need, ...]


#: Per request: what the broker authorizes it with. Rows name the case where the table has one per case.
REQUEST_ACLS: Mapping[str, tuple[Need | AnyOf, ...]] = {
    # PRODUCE (0): WRITE on the TransactionalId for transactional records, WRITE on each Topic. The table's
    # "IdempotentWrite on Cluster" row is not checked by KafkaApis.handleProduceRequest; it is InitProducerId's.
    "Produce(transactional)": (("WRITE", "TRANSACTIONAL_ID"), ("WRITE", "TOPIC")),
    "Produce": (("WRITE", "TOPIC"),),
    # FETCH (1), a consumer's: READ on each Topic.
    "Fetch": (("READ", "TOPIC"),),
    # LIST_OFFSETS (2), METADATA (3): DESCRIBE on each Topic (no auto-creation: CREATE is not asked for).
    "ListOffsets": (("DESCRIBE", "TOPIC"),),
    "Metadata": (("DESCRIBE", "TOPIC"),),
    # OFFSET_COMMIT (8): READ on the Group, READ on each Topic.
    "OffsetCommit": (("READ", "GROUP"), ("READ", "TOPIC")),
    # OFFSET_FETCH (9): DESCRIBE on the Group, DESCRIBE on each Topic.
    "OffsetFetch": (("DESCRIBE", "GROUP"), ("DESCRIBE", "TOPIC")),
    # FIND_COORDINATOR (10): DESCRIBE on the Group (group key) or on the TransactionalId (transaction key).
    "FindCoordinator(GROUP)": (("DESCRIBE", "GROUP"),),
    "FindCoordinator(TRANSACTION)": (("DESCRIBE", "TRANSACTIONAL_ID"),),
    # DESCRIBE_GROUPS (15): DESCRIBE on the Group.
    "DescribeGroups": (("DESCRIBE", "GROUP"),),
    # INIT_PRODUCER_ID (22): WRITE on the TransactionalId when it has one; else IdempotentWrite on the Cluster,
    # which KafkaApis.handleInitProducerIdRequest also grants to WRITE on any topic.
    "InitProducerId(transactional)": (("WRITE", "TRANSACTIONAL_ID"),),
    "InitProducerId(idempotent)": (AnyOf((("IDEMPOTENT_WRITE", "CLUSTER"), ("WRITE", ANY_TOPIC))),),
    # ADD_PARTITIONS_TO_TXN (24): WRITE on the TransactionalId, WRITE on each Topic.
    "AddPartitionsToTxn": (("WRITE", "TRANSACTIONAL_ID"), ("WRITE", "TOPIC")),
    # ADD_OFFSETS_TO_TXN (25): WRITE on the TransactionalId, READ on the Group.
    "AddOffsetsToTxn": (("WRITE", "TRANSACTIONAL_ID"), ("READ", "GROUP")),
    # END_TXN (26): WRITE on the TransactionalId.
    "EndTxn": (("WRITE", "TRANSACTIONAL_ID"),),
    # WRITE_TXN_MARKERS (27), the admin AbortTransaction: ALTER on the Cluster, else CLUSTER_ACTION
    # (KafkaApis.handleWriteTxnMarkersRequest checks ALTER first; CLUSTER_ACTION is the brokers' own right).
    "WriteTxnMarkers": (AnyOf((("ALTER", "CLUSTER"), ("CLUSTER_ACTION", "CLUSTER"))),),
    # TXN_OFFSET_COMMIT (28): WRITE on the TransactionalId, READ on the Group, READ on each Topic.
    "TxnOffsetCommit": (("WRITE", "TRANSACTIONAL_ID"), ("READ", "GROUP"), ("READ", "TOPIC")),
    # DESCRIBE_ACLS (29): DESCRIBE on the Cluster.
    "DescribeAcls": (("DESCRIBE", "CLUSTER"),),
    # DESCRIBE_CONFIGS (32): DESCRIBE_CONFIGS on the Cluster for broker configs, on the Topic for topic configs.
    "DescribeConfigs(BROKER)": (("DESCRIBE_CONFIGS", "CLUSTER"),),
    "DescribeConfigs(TOPIC)": (("DESCRIBE_CONFIGS", "TOPIC"),),
    # DESCRIBE_CLUSTER (60): the table says DESCRIBE on the Cluster; AuthHelper.computeDescribeClusterResponse
    # checks it only to include the cluster's authorized operations (0 otherwise): the request itself is never
    # refused.
    "DescribeCluster": (),
    "DescribeCluster(authorized operations)": (("DESCRIBE", "CLUSTER"),),
    # DESCRIBE_PRODUCERS (61): READ on each Topic.
    "DescribeProducers": (("READ", "TOPIC"),),
    # DESCRIBE_TRANSACTIONS (65), LIST_TRANSACTIONS (66): DESCRIBE on the TransactionalId (ListTransactions
    # leaves out the ids the caller may not describe).
    "DescribeTransactions": (("DESCRIBE", "TRANSACTIONAL_ID"),),
    "ListTransactions": (("DESCRIBE", "TRANSACTIONAL_ID"),),
}

#: ``IMPLIED_BY[x]``: the operations whose ALLOW implies ALLOW ``x`` on the same resource (AclOperation's javadoc).
IMPLIED_BY: Mapping[str, frozenset[str]] = {
    "DESCRIBE": frozenset({"READ", "WRITE", "DELETE", "ALTER"}),
    "DESCRIBE_CONFIGS": frozenset({"ALTER_CONFIGS"}),
}


@dataclass(frozen=True, order=True)
class Resource:
    """A resource pattern: a name, ``LITERAL`` (exactly, or ``*`` for every one) or ``PREFIXED``."""

    name: str
    pattern: str = "LITERAL"


@dataclass(frozen=True, order=True)
class Binding:
    """One ALLOW ACL of a principal, as ``kafka-acls.sh --list`` shows it (principal and host aside)."""

    resource_type: str
    name: str
    pattern: str
    operation: str

    def __str__(self) -> str:
        return f"{self.operation} on {self.resource_type} {self.name!r} ({self.pattern})"


@dataclass(frozen=True)
class Call:
    """One request a role's code sends, and the resources it names by type (the cluster is implicit).

    :param request: a key of :data:`REQUEST_ACLS`.
    :param where: the code that sends it (for the reader of a failure).
    """

    request: str
    on: Mapping[str, tuple[Resource, ...]] = field(default_factory=dict)
    where: str = ""

    def resources(self, resource_type: str) -> tuple[Resource, ...]:
        if resource_type == "CLUSTER":
            return (Resource(CLUSTER),)
        found = self.on.get(resource_type)
        if not found:
            raise AssertionError(f"{self.request} ({self.where}) is authorized on a {resource_type} but names none")
        return found


def _requirements(call: Call) -> tuple[list[Binding], list[AnyOf]]:
    if call.request not in REQUEST_ACLS:
        raise AssertionError(f"{call.request!r} is not in Kafka's table (REQUEST_ACLS)")
    rows = REQUEST_ACLS[call.request]
    named = {t for need in rows if not isinstance(need, AnyOf) for _, t in [need]}
    unused = set(call.on) - named - {t for need in rows if isinstance(need, AnyOf) for _, t in need.options}
    if unused:
        raise AssertionError(f"{call.request} ({call.where}) names {sorted(unused)}, which Kafka does not check")
    bindings = [Binding(t, r.name, r.pattern, op) for need in rows if not isinstance(need, AnyOf)
                for op, t in [need] for r in call.resources(t)]
    return bindings, [need for need in rows if isinstance(need, AnyOf)]


def _allows(bindings: Iterable[Binding], operation: str, resource_type: str) -> bool:
    """Whether ``bindings`` allow ``operation`` on a resource of ``resource_type`` (``ANY_TOPIC``: some topic)."""
    resource_type = "TOPIC" if resource_type == ANY_TOPIC else resource_type
    return any(b.resource_type == resource_type and (b.operation == operation or
                                                     b.operation in IMPLIED_BY.get(operation, ()))
               for b in bindings)


def derive(calls: Iterable[Call]) -> list[Binding]:
    """The least set of bindings that lets every one of ``calls`` through, by Kafka's table.

    Every request's ACLs are taken on the resources the call names; an alternative is satisfied
    by what the other calls need already, else its documented option is taken; an ACL another one
    in the set implies (``DESCRIBE`` next to ``READ`` on the same resource) is dropped.
    """
    calls = list(calls)
    needed: dict[Binding, None] = {}  # ordered: the order of first need
    alternatives: list[AnyOf] = []
    for call in calls:
        bindings, choices = _requirements(call)
        needed.update(dict.fromkeys(bindings))
        alternatives += choices
    for choice in alternatives:
        if not any(_allows(needed, op, t) for op, t in choice.options):
            op, t = choice.options[0]
            assert t == "CLUSTER", f"{choice}: only a cluster option can be taken without naming a resource"
            needed[Binding(t, CLUSTER, "LITERAL", op)] = None
    return [b for b in needed if not any(
        o.operation in IMPLIED_BY.get(b.operation, ()) and (o.resource_type, o.name, o.pattern) ==
        (b.resource_type, b.name, b.pattern) for o in needed)]


def needed_by(calls: Iterable[Call], binding: Binding) -> list[str]:
    """The requests among ``calls`` that need exactly ``binding`` (its operation on its resource), by Kafka's table."""
    found = []
    for call in calls:
        bindings, choices = _requirements(call)
        exact = binding in bindings or any(
            (binding.operation, binding.resource_type) in choice.options and binding.resource_type == "CLUSTER"
            for choice in choices)
        if exact:
            found.append(f"{call.request} ({call.where})")
    return found
