"""The least-privilege ACL set of each role on one pipeline (docs/security.md), each ACL with its reason.

Every ACL below names the Kafka requests that need it, as Kafka's broker authorizes them
(``KafkaApis``): a request the role's code sends and the operation the broker checks for it.
Kafka's implied operations keep the sets short: ``READ``, ``WRITE``, ``DELETE`` and ``ALTER`` on
a resource imply ``DESCRIBE`` on it, so a topic the job reads needs no separate ``DESCRIBE``
for its metadata, offsets or the group's committed offsets on it.

- **job** (pre-flight and the Spark job, both writers): read the input topics (Spark's source
  and the offsets committed in the sink's transactions), write the output and dead-letter
  topics, ``READ`` the sink group, ``WRITE`` the transactional ids under the prefix, and what
  pre-flight reads (broker and topic configs; ``DESCRIBE`` and ``DESCRIBE_CONFIGS`` on the internal
  topics ``__transaction_state`` and ``__consumer_offsets``, whose replicas, in-sync replicas and
  min ISR tell whether they take writes: metadata only, no record).
- **recovery** (abort, verify, rewind, align, the manual recovery actions): describe and fence
  the transactions under the prefix, find hanging transactions on the output and dead-letter
  partitions, read and commit the sink group's offsets. Aborting a *hanging* transaction is
  opt-in (``hanging_abort``): Kafka authorizes the admin AbortTransaction with ``ALTER`` on the
  cluster, which also lets the principal create ACLs, i.e. grant itself anything. Without it,
  recovery still fences every lingering transaction (the common case after a crash) and reports
  hanging ones with the command an administrator runs.
- **health** (sensors, the scheduled health check): describe only. Reading the brokers'
  ``transaction.max.timeout.ms`` (the age above which a pinned input partition is hanging) is
  opt-in (``broker_configs``): ``DESCRIBE_CONFIGS`` on the cluster shows every broker's non-secret
  settings, and the health check runs without it, judging by Kafka's default (design note 62).

The transactional ids are granted with the ``PREFIXED`` pattern on ``<prefix>-``, the common
head of every id :mod:`airflow_provider_eos.core.transactional_ids` builds: ``<prefix>`` alone
would also cover ``<prefix>2-0``, another pipeline's id. ``<prefix>-`` still covers the ids of a
pipeline whose prefix begins with it (``orders-`` covers ``orders-eu-0``):
:func:`covered_pipelines` finds those, and pre-flight (EOS408) and ``eos acls`` refuse them.
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_provider_eos.core.acls.acl import (
    CLUSTER_RESOURCE_NAME,
    INTERNAL_TOPICS,
    Acl,
    AclError,
    Operation,
    PatternType,
    ResourceType,
    Role,
    check_principal,
    check_role,
)
from airflow_provider_eos.core.spec import Mode, PipelineSpec

__all__ = ["covered_pipelines", "id_patterns_overlap", "required_acls", "transactional_id_pattern"]

_ALTER_CLUSTER_CAUTION = (
    "ALTER on the cluster also allows creating and deleting ACLs (and reassigning partitions, electing leaders, "
    "altering SCRAM credentials): grant it to a principal trusted like an administrator, or leave it out and have "
    "an administrator abort hanging transactions (`kafka-transactions.sh abort`); lingering ones are still fenced"
)


def transactional_id_pattern(spec: PipelineSpec) -> str:
    """The ``PREFIXED`` resource name covering every transactional id of the pipeline: ``<prefix>-``.

    Every id the scheme builds is ``<prefix>-<writer index>`` or ``<prefix>-<t>_<p>``.
    """
    return f"{spec.transactional_id_prefix}-"


def id_patterns_overlap(prefix: str, other: str) -> bool:
    """Whether the ``PREFIXED`` pattern of one prefix covers ids of the other (``orders`` and ``orders-eu``).

    ``<prefix>-`` covers every id that begins with it, so ``orders-`` also covers ``orders-eu-0``:
    a principal granted ``orders-`` may fence ``orders-eu``'s transactions. Equal prefixes do not
    count here: they are shared outright (pre-flight EOS403).
    """
    mine, theirs = f"{prefix}-", f"{other}-"
    return mine != theirs and (theirs.startswith(mine) or mine.startswith(theirs))


def covered_pipelines(spec: PipelineSpec, others: Iterable[PipelineSpec]) -> list[PipelineSpec]:
    """The other pipelines whose transactional ids the pipeline's ACL pattern covers, or whose pattern covers its ids.

    :param others: the known pipelines (a specs folder; ``spec`` itself may be among them).
    """
    return sorted(
        (other for other in others if id_patterns_overlap(spec.transactional_id_prefix, other.transactional_id_prefix)),
        key=lambda other: other.name,
    )


def required_acls(
    spec: PipelineSpec, principal: str, role: Role | str, *, hanging_abort: bool = False, broker_configs: bool = False,
) -> list[Acl]:
    """The minimal ACLs ``principal`` needs to run ``role``'s tasks on the pipeline ``spec``.

    :param spec: the pipeline.
    :param principal: ``User:NAME``.
    :param role: ``job``, ``recovery`` or ``health``.
    :param hanging_abort: recovery only: add what aborting a hanging transaction needs (``ALTER``
        on the cluster, ``DESCRIBE`` on every transactional id); see the module.
    :param broker_configs: health only: add ``DESCRIBE_CONFIGS`` on the cluster, so that health reads
        the brokers' ``transaction.max.timeout.ms`` instead of judging by Kafka's default; see the module.
    :return: the ACLs in a stable order (cluster, topics, group, transactional ids).
    :raises AclError: for a principal that is not ``User:NAME``, an unknown role, ``hanging_abort``
        for a role other than recovery, or ``broker_configs`` for a role other than health.
    """
    check_principal(principal)
    checked = check_role(role)
    if hanging_abort and checked != "recovery":
        raise AclError(f"hanging_abort is a right of the recovery role, not of {checked!r}",
                       fix="pass --hanging-abort only with --role recovery")
    if broker_configs and checked != "health":
        # The job's and recovery's sets hold it already: the option would add nothing, and silently so.
        raise AclError(f"broker_configs is an option of the health role, not of {checked!r}: the {checked} role's "
                       "set already holds DESCRIBE_CONFIGS on the cluster",
                       fix="pass --broker-configs only with --role health")
    if checked == "recovery":
        return _recovery(spec, principal, hanging_abort=hanging_abort)
    if checked == "health":
        return _health(spec, principal, broker_configs=broker_configs)
    return _job(spec, principal)


def _acl(  # noqa: PLR0913  # an Acl's fields, forwarded by name
    principal: str, resource_type: ResourceType, name: str, operation: Operation, why: str, *,
    pattern: PatternType = PatternType.LITERAL, caution: str | None = None,
) -> Acl:
    return Acl(principal=principal, resource_type=resource_type, name=name, pattern=pattern, operation=operation,
               why=why, caution=caution)


def _sink_topics(spec: PipelineSpec) -> list[tuple[str, str]]:
    """``(topic, role)`` of the topics the sink writes: the output and, when configured, the dead letters."""
    return [(spec.output_topic, "output"), *([(spec.dlq_topic, "dead-letter")] if spec.dlq_topic else [])]


def _job(spec: PipelineSpec, principal: str) -> list[Acl]:
    exactly_once = spec.mode is Mode.EXACTLY_ONCE
    acls = [
        _acl(principal, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, Operation.DESCRIBE_CONFIGS,
             "pre-flight: DescribeConfigs(BROKER) reads the brokers' settings: transaction.max.timeout.ms, "
             "transactional.id.expiration.ms and the replication factors and min ISR Kafka creates the internal "
             "topics with (EOS1xx, EOS2xx); the sink reads offsets.retention.minutes before a first batch"),
    ]
    # Metadata only (DESCRIBE reads no record): whether the internal topics take writes is theirs, not the brokers'.
    for topic, rule in zip(INTERNAL_TOPICS, ("EOS201", "EOS204"), strict=True):
        acls += [
            _acl(principal, ResourceType.TOPIC, topic, Operation.DESCRIBE,
                 f"pre-flight: the all-topics Metadata shows the replicas and in-sync replicas of each {topic} "
                 f"partition ({rule}); DESCRIBE gives metadata, no data"),
            _acl(principal, ResourceType.TOPIC, topic, Operation.DESCRIBE_CONFIGS,
                 f"pre-flight: DescribeConfigs(TOPIC) reads the min.insync.replicas of {topic} ({rule})"),
        ]
    for topic in spec.input_topics:
        acls += [
            _acl(principal, ResourceType.TOPIC, topic, Operation.READ,
                 "Spark's Kafka source: Fetch (read_committed); implies DESCRIBE for Metadata, ListOffsets of the "
                 "admin offset reader and OffsetFetch of the sink group's offsets"
                 + ("; the sink's TxnOffsetCommit checks READ on each input topic it commits" if exactly_once else "")),
            _acl(principal, ResourceType.TOPIC, topic, Operation.DESCRIBE_CONFIGS,
                 "pre-flight: DescribeConfigs(TOPIC) reads retention.ms, cleanup.policy, min.insync.replicas (EOS2xx)"),
        ]
    for topic, kind in _sink_topics(spec):
        writer = ("the sink's transactional producer: AddPartitionsToTxn and Produce" if exactly_once else
                  "Spark's Kafka writer: Produce, and InitProducerId of its idempotent producer (allowed by WRITE "
                  "on any topic)")
        acls += [
            _acl(principal, ResourceType.TOPIC, topic, Operation.WRITE,
                 f"{writer} to the {kind} topic; implies DESCRIBE for Metadata"),
            _acl(principal, ResourceType.TOPIC, topic, Operation.DESCRIBE_CONFIGS,
                 f"pre-flight: DescribeConfigs(TOPIC) of the {kind} topic (EOS2xx)"),
        ]
    if exactly_once:
        acls += [
            _acl(principal, ResourceType.GROUP, spec.group_id, Operation.READ,
                 "send_offsets_to_transaction: AddOffsetsToTxn and TxnOffsetCommit check READ on the sink group; "
                 "implies DESCRIBE for FindCoordinator(GROUP) of the group-metadata consumer, OffsetFetch "
                 "(require_stable) before each batch and pre-flight's DescribeGroups"),
            _acl(principal, ResourceType.TRANSACTIONAL_ID, transactional_id_pattern(spec), Operation.WRITE,
                 "the driver's producer <prefix>-0 and the executor writers' <prefix>-<t>_<p>: InitProducerId, "
                 "AddPartitionsToTxn, Produce, AddOffsetsToTxn, TxnOffsetCommit, EndTxn; implies DESCRIBE for "
                 "FindCoordinator(TRANSACTION) and pre-flight's ListTransactions/DescribeTransactions",
                 pattern=PatternType.PREFIXED),
        ]
    else:
        # The at-least-once writer commits nothing to the group and opens no transaction; pre-flight still reads both.
        acls += [
            _acl(principal, ResourceType.GROUP, spec.group_id, Operation.DESCRIBE,
                 "pre-flight: DescribeGroups and OffsetFetch of the sink group (EOS4xx)"),
            _acl(principal, ResourceType.TRANSACTIONAL_ID, transactional_id_pattern(spec), Operation.DESCRIBE,
                 "pre-flight: ListTransactions lists only ids the principal may DESCRIBE; DescribeTransactions "
                 "(EOS402)",
                 pattern=PatternType.PREFIXED),
        ]
    return acls


def _recovery(spec: PipelineSpec, principal: str, *, hanging_abort: bool) -> list[Acl]:
    acls = [
        _acl(principal, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, Operation.DESCRIBE_CONFIGS,
             "verify and align: DescribeConfigs(BROKER) reads offsets.retention.minutes; "
             "abort: DescribeConfigs(BROKER) reads transaction.max.timeout.ms, the age above which an open "
             "partition transaction is hanging"),
    ]
    if hanging_abort:
        acls.append(_acl(principal, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, Operation.ALTER,
                         "abort of a hanging transaction: the admin AbortTransaction sends WriteTxnMarkers to the "
                         "partition leader, which Kafka authorizes with ALTER (else CLUSTER_ACTION) on the cluster",
                         caution=_ALTER_CLUSTER_CAUTION))
    for topic in spec.input_topics:
        acls.append(_acl(principal, ResourceType.TOPIC, topic, Operation.READ,
                         "align: OffsetCommit (alter_consumer_group_offsets) checks READ on each committed topic; "
                         "implies DESCRIBE for Metadata and OffsetFetch of verify, rewind and align"))
    for topic, kind in _sink_topics(spec):
        acls.append(_acl(principal, ResourceType.TOPIC, topic, Operation.READ,
                         f"abort: DescribeProducers on the {kind} partitions checks READ; implies DESCRIBE for "
                         "Metadata and ListOffsets (LSO vs high watermark)"))
    acls += [
        _acl(principal, ResourceType.GROUP, spec.group_id, Operation.READ,
             "align: OffsetCommit checks READ on the sink group; implies DESCRIBE for OffsetFetch (verify, rewind, "
             "align)"),
        _acl(principal, ResourceType.TRANSACTIONAL_ID, transactional_id_pattern(spec), Operation.WRITE,
             "abort of a lingering transaction: the fence's InitProducerId under the pipeline's id; implies DESCRIBE "
             "for FindCoordinator, ListTransactions and DescribeTransactions under the prefix (abort, and the "
             "liveness check before rewind and align execute)",
             pattern=PatternType.PREFIXED),
    ]
    if hanging_abort:
        acls.append(_acl(principal, ResourceType.TRANSACTIONAL_ID, "*", Operation.DESCRIBE,
                         "abort of a hanging transaction: ListTransactions (by producer id) lists only ids the "
                         "principal may DESCRIBE; without every id a hanging transaction of another application's id "
                         "would look unattributed, hence the pipeline's, and be aborted instead of only reported"))
    return acls


def _health(spec: PipelineSpec, principal: str, *, broker_configs: bool) -> list[Acl]:
    acls = [
        _acl(principal, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, Operation.DESCRIBE_CONFIGS,
             "optional (--broker-configs): DescribeConfigs(BROKER) reads transaction.max.timeout.ms, the age above "
             "which a pinned input partition is hanging (input_hang_after_ms); without it health "
             "judges by Kafka's default"),
    ] if broker_configs else []
    acls += [
        _acl(principal, ResourceType.TOPIC, topic, Operation.DESCRIBE,
             "Metadata and ListOffsets (LSO, high watermark, log start) of the input partitions; OffsetFetch of the "
             "group's offsets on them")
        for topic in spec.input_topics
    ]
    acls += [
        _acl(principal, ResourceType.TOPIC, topic, Operation.DESCRIBE,
             f"Metadata and ListOffsets (LSO vs high watermark) of the {kind} partitions")
        for topic, kind in _sink_topics(spec)
    ]
    acls += [
        _acl(principal, ResourceType.GROUP, spec.group_id, Operation.DESCRIBE,
             "OffsetFetch (require_stable) of the sink group's offsets and batch markers"),
        _acl(principal, ResourceType.TRANSACTIONAL_ID, transactional_id_pattern(spec), Operation.DESCRIBE,
             "ListTransactions lists only ids the principal may DESCRIBE; DescribeTransactions of those under the "
             "prefix (lingering transactions)", pattern=PatternType.PREFIXED),
    ]
    return acls
