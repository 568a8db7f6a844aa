"""The Kafka requests each role's code sends, read from that code; with :mod:`.kafka_authorization`, its ACL set.

Each :class:`~tests.support.kafka_authorization.Call` names the request, the resources it names
and where the code sends it. Only requests whose refusal fails the role's task are listed; the
ones whose refusal the code expects and works around are left out, each with the reason here:

- pre-flight's permission read (``kafka/acl_probes.py``): DescribeCluster with the authorized
  operations and DescribeAcls need DESCRIBE on the cluster, which no role is granted; without it
  the read falls back to probes. The probes (DescribeTopics / DescribeConsumerGroups with
  authorized operations, DescribeConfigs, EndTxn and DescribeTransactions of an unused id) ask
  whether the set is held, they do not need anything beyond it;
- the login check (``kafka/login.py``) is DescribeCluster without authorized operations: never
  refused;
- health without ``broker_configs``: its read of the brokers' ``transaction.max.timeout.ms``
  (``kafka/health_probe.py``, only while an input partition is pinned) is DescribeConfigs on the cluster,
  which the health role's set holds only with that opt-in (docs/security.md); a refusal leaves Kafka's
  default as the input's hanging threshold, and the report's note says so and how to grant it;
- the refusal paths (``raise_if_topics_refused``, ``TransactionalProducer._unauthorized_topics``)
  run only after a refusal, to name it;
- recovery without ``hanging_abort``: find-hanging's ListTransactions by producer id leaves out
  the ids the principal may not describe, and ``may_describe_every_id`` reads a refusal as "no"
  (the hanging transaction is then only reported).

The transactional ids a role touches are an open set (one per writer and input partition, and
whatever ListTransactions finds under the prefix): by the naming scheme (docs/architecture.md, transactional
ids: ``<prefix>-<writer>`` and ``<prefix>-<t>_<p>``) they are exactly the ids starting
``<prefix>-``, the ``PREFIXED`` resource :func:`pipeline_ids`. Topics and the group are named
literally.
"""

from __future__ import annotations

from airflow_provider_eos.core.spec import Mode, PipelineSpec
from tests.support.kafka_authorization import Call, Resource

__all__ = ["EVERY_ID", "calls_of", "pipeline_ids"]

#: Every transactional id, whoever's (``LITERAL *``).
EVERY_ID = Resource("*")


def pipeline_ids(spec: PipelineSpec) -> Resource:
    """The pipeline's transactional ids: every id starting ``<prefix>-`` (not ``<prefix>``: ``<prefix>2-0`` is
    another pipeline's)."""
    return Resource(f"{spec.transactional_id_prefix}-", "PREFIXED")


def _topics(*names: str | None) -> tuple[Resource, ...]:
    return tuple(Resource(n) for n in names if n)


def _job(spec: PipelineSpec) -> list[Call]:
    inputs = _topics(*spec.input_topics)
    sink = _topics(spec.output_topic, spec.dlq_topic)
    group, ids = (Resource(spec.group_id),), (pipeline_ids(spec),)
    internal = (Resource("__transaction_state"), Resource("__consumer_offsets"))
    preflight, topic_reads = "kafka/cluster_facts.py gather_facts", "kafka/topic_facts.py TopicReads"
    calls = [
        Call("Metadata", {"TOPIC": inputs + sink}, f"{topic_reads}: topics (list_topics)"),
        # A topic the all-topics metadata leaves out is described by name: missing, or hidden (no DESCRIBE).
        Call("Metadata", {"TOPIC": inputs + sink}, f"{topic_reads}: topic_reads.why_unlisted (DescribeTopics)"),
        Call("DescribeConfigs(BROKER)", where=f"{preflight}: broker_configs"),
        Call("DescribeConfigs(TOPIC)", {"TOPIC": inputs + sink}, f"{topic_reads}: topic_reads.read_topic_configs"),
        # EOS201, EOS204: the all-topics metadata lists a topic only to a principal that may DESCRIBE it.
        Call("Metadata", {"TOPIC": internal}, f"{topic_reads}: internal_topics (replicas, in-sync replicas)"),
        Call("DescribeConfigs(TOPIC)", {"TOPIC": internal}, f"{topic_reads}: internal_topics (min.insync.replicas)"),
        Call("FindCoordinator(GROUP)", {"GROUP": group}, f"{preflight}: describe_group"),
        Call("DescribeGroups", {"GROUP": group}, f"{preflight}: describe_group"),
        Call("OffsetFetch", {"GROUP": group, "TOPIC": inputs}, f"{preflight}: read_group_offsets"),
        Call("FindCoordinator(TRANSACTION)", {"TRANSACTIONAL_ID": ids}, f"{preflight}: scan_prefix"),
        Call("DescribeTransactions", {"TRANSACTIONAL_ID": ids}, f"{preflight}: scan_prefix"),
        Call("ListTransactions", {"TRANSACTIONAL_ID": ids}, f"{preflight}: scan_prefix"),
        # Spark's Kafka source (subscribe), with its admin offset reader on the driver and assigned
        # consumers (no group membership) on the executors.
        Call("Metadata", {"TOPIC": inputs}, "spark/job.py read_source: the offset reader's describeTopics"),
        Call("ListOffsets", {"TOPIC": inputs}, "spark/job.py read_source: latest/earliest offsets"),
        Call("Fetch", {"TOPIC": inputs}, "spark/job.py read_source: the executors' consumers"),
    ]
    if spec.mode is Mode.AT_LEAST_ONCE:
        return [
            *calls,
            # Spark's KafkaWriter: a Java producer, idempotent by default, without a transactional id.
            Call("Metadata", {"TOPIC": sink}, "spark/at_least_once.py: Spark's Kafka writer"),
            Call("InitProducerId(idempotent)", where="spark/at_least_once.py: Spark's Kafka writer"),
            Call("Produce", {"TOPIC": sink}, "spark/at_least_once.py: Spark's Kafka writer"),
        ]
    producer = "spark/transactional_producer.py (driver <prefix>-0, executors <prefix>-<t>_<p>)"
    return [
        *calls,
        Call("FindCoordinator(TRANSACTION)", {"TRANSACTIONAL_ID": ids}, f"{producer}: init_transactions"),
        Call("InitProducerId(transactional)", {"TRANSACTIONAL_ID": ids}, f"{producer}: init_transactions"),
        Call("OffsetFetch", {"GROUP": group, "TOPIC": inputs},
             "spark/driver_writer.py, partition_writer.py: read_committed_offsets before each batch"),
        Call("DescribeConfigs(BROKER)", where="spark/sink_clients.py planned_batch: offsets.retention.minutes "
             "before a batch that takes an empty group for nothing committed"),
        Call("FindCoordinator(GROUP)", {"GROUP": group},
             "spark/sink_clients.py: the group-metadata consumer; TxnOffsetCommit's coordinator"),
        Call("Metadata", {"TOPIC": sink}, f"{producer}: produce"),
        Call("AddPartitionsToTxn", {"TRANSACTIONAL_ID": ids, "TOPIC": sink}, f"{producer}: produce"),
        Call("Produce(transactional)", {"TRANSACTIONAL_ID": ids, "TOPIC": sink}, f"{producer}: produce"),
        Call("AddOffsetsToTxn", {"TRANSACTIONAL_ID": ids, "GROUP": group}, f"{producer}: send_offsets"),
        Call("TxnOffsetCommit", {"TRANSACTIONAL_ID": ids, "GROUP": group, "TOPIC": inputs},
             f"{producer}: send_offsets"),
        Call("EndTxn", {"TRANSACTIONAL_ID": ids}, f"{producer}: commit / abort"),
    ]


def _recovery(spec: PipelineSpec, *, hanging_abort: bool) -> list[Call]:
    inputs = _topics(*spec.input_topics)
    sink = _topics(spec.output_topic, spec.dlq_topic)
    group, ids = (Resource(spec.group_id),), (pipeline_ids(spec),)
    offsets = "kafka/group_offsets.py (verify, rewind, align)"
    abort = "usecases/abort.py, kafka/transactions_admin.py"
    calls = [
        Call("Metadata", {"TOPIC": inputs}, f"{offsets}: verification_partitions"),
        Call("FindCoordinator(GROUP)", {"GROUP": group}, "kafka/group_offset_fetch.py: read_group_offsets"),
        Call("OffsetFetch", {"GROUP": group, "TOPIC": inputs}, "kafka/group_offset_fetch.py: read_group_offsets"),
        Call("OffsetCommit", {"GROUP": group, "TOPIC": inputs}, "usecases/align.py: write_committed_offsets"),
        Call("DescribeConfigs(BROKER)", where="usecases/verify.py: offsets_retention (a batch in flight's expiry)"),
        Call("Metadata", {"TOPIC": sink}, f"{abort}: topic_partitions"),
        Call("DescribeCluster", where=f"{abort}: broker_max_transaction_timeout_ms"),
        Call("DescribeConfigs(BROKER)", where=f"{abort}: broker_max_transaction_timeout_ms"),
        Call("ListOffsets", {"TOPIC": sink}, f"{abort}: partition_offsets (LSO, high watermark)"),
        Call("DescribeProducers", {"TOPIC": sink}, f"{abort}: scan_hanging, _aborted_still_open"),
        Call("FindCoordinator(TRANSACTION)", {"TRANSACTIONAL_ID": ids}, f"{abort}: scan_prefix, fence"),
        Call("DescribeTransactions", {"TRANSACTIONAL_ID": ids}, f"{abort}: scan_prefix"),
        Call("ListTransactions", {"TRANSACTIONAL_ID": ids}, f"{abort}: scan_prefix"),
        Call("InitProducerId(transactional)", {"TRANSACTIONAL_ID": ids}, "kafka/transaction_actions.py fence"),
    ]
    if hanging_abort:
        calls += [
            # find-hanging lists the candidates' producers whoever's id they have, to tell another
            # application's transaction from an unattributed one.
            Call("ListTransactions", {"TRANSACTIONAL_ID": (EVERY_ID,)}, f"{abort}: scan_hanging (by producer id)"),
            Call("DescribeTransactions", {"TRANSACTIONAL_ID": (EVERY_ID,)}, f"{abort}: may_describe_every_id"),
            Call("WriteTxnMarkers", where="kafka/transaction_actions.py abort_hanging (admin AbortTransaction)"),
        ]
    return calls


def _health(spec: PipelineSpec, *, broker_configs: bool) -> list[Call]:
    inputs = _topics(*spec.input_topics)
    sink = _topics(spec.output_topic, spec.dlq_topic)
    group, ids = (Resource(spec.group_id),), (pipeline_ids(spec),)
    probe = "kafka/health_probe.py probe"
    limit = f"{probe}: _open_transactions, broker_max_transaction_timeout_ms (while an input partition is pinned)"
    opted = [Call("DescribeCluster", where=limit), Call("DescribeConfigs(BROKER)", where=limit)]
    return [
        *(opted if broker_configs else []),
        Call("Metadata", {"TOPIC": inputs + sink}, f"{probe}: _topic_partitions"),
        Call("FindCoordinator(GROUP)", {"GROUP": group}, f"{probe}: _settled_read"),
        Call("OffsetFetch", {"GROUP": group, "TOPIC": inputs}, f"{probe}: _settled_read"),
        Call("ListOffsets", {"TOPIC": inputs + sink}, f"{probe}: _list_offsets (LSO, high watermark, log start)"),
        Call("FindCoordinator(TRANSACTION)", {"TRANSACTIONAL_ID": ids}, f"{probe}: _open_transactions"),
        Call("ListTransactions", {"TRANSACTIONAL_ID": ids}, f"{probe}: _open_transactions"),
        Call("DescribeTransactions", {"TRANSACTIONAL_ID": ids}, f"{probe}: _open_transactions"),
    ]


def calls_of(spec: PipelineSpec, role: str, *, hanging_abort: bool = False, broker_configs: bool = False) -> list[Call]:
    """The requests ``role``'s tasks send on the pipeline ``spec``, with the role's opt-in: recovery's
    ``hanging_abort``, health's ``broker_configs``."""
    assert not hanging_abort or role == "recovery", "hanging_abort is recovery's"
    assert not broker_configs or role == "health", "broker_configs is health's"
    if role == "recovery":
        return _recovery(spec, hanging_abort=hanging_abort)
    if role == "health":
        return _health(spec, broker_configs=broker_configs)
    return _job(spec)
