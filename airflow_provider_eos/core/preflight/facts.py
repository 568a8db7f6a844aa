"""The facts the rules read: the spec plus what was read from the cluster, the checkpoint and the other specs.

A fact that is ``None`` was not read (no access, no connection, not asked for); every rule that
needs it reports "not checked", with the reason when the gatherer recorded one in
:attr:`PreflightFacts.unavailable`. The facts are gathered live by
:mod:`airflow_provider_eos.kafka.cluster_facts`; they are plain frozen dataclasses because they
are built positionally and varied with :func:`dataclasses.replace`, never serialized.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_eos.core.acls import PermissionFacts
from airflow_provider_eos.core.broker_protocol import BrokerProtocol
from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.kafka_defaults import KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from airflow_provider_eos.core.markers import CommittedOffsets
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.transactions import Transaction
from airflow_provider_eos.core.transform_traits import TransformTraits
from airflow_provider_eos.core.writers_choice import WritersChoice

__all__ = [
    "DEFAULT_LONGEST_EXPECTED_PAUSE_MS",
    "KAFKA_BROKER_DEFAULTS",
    "CheckpointFacts",
    "InternalTopicFacts",
    "PreflightError",
    "PreflightFacts",
    "TopicFacts",
]

#: How long a pipeline may be stopped and still resume, unless :attr:`PreflightFacts.
#: longest_expected_pause_ms` says otherwise: a long weekend (3 days). The spec has no field for
#: it because it is an operational promise, not part of the pipeline's definition; it is
#: compared with ``transactional.id.expiration.ms`` (EOS107), ``offsets.retention.minutes``
#: (EOS108) and the input topics' retention (EOS212), all 7 days by Kafka's default, so the
#: defaults pass with room to spare.
DEFAULT_LONGEST_EXPECTED_PAUSE_MS = 3 * 86_400_000

#: Kafka's defaults for the broker settings the rules read, used when a broker does not report
#: one (older brokers, a DescribeConfigs answer filtered by ACLs).
KAFKA_BROKER_DEFAULTS: Mapping[str, int] = {
    "transaction.max.timeout.ms": KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    "transactional.id.expiration.ms": 604_800_000,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "offsets.topic.replication.factor": 3,
    "offsets.retention.minutes": 10_080,
}


class PreflightError(EosError):
    """The facts for a pre-flight could not be gathered at all (e.g. no broker reachable)."""


@dataclass(frozen=True)
class TopicFacts:
    """What the cluster says about one topic; ``None`` fields were not read.

    :param name: the topic.
    :param exists: whether the cluster has it.
    :param partitions: its partition count.
    :param replication_factor: the smallest replica count over its partitions.
    :param min_insync_replicas: its ``min.insync.replicas``.
    :param cleanup_policy: its ``cleanup.policy`` (``delete``, ``compact`` or both).
    :param retention_ms: its ``retention.ms`` (``-1``: unlimited).
    :param unclean_leader_election: its ``unclean.leader.election.enable``.
    :param retention_bytes: its ``retention.bytes``, per partition (``-1``: unlimited).
    :param refused: the broker refused to describe it (``TOPIC_AUTHORIZATION_FAILED``): the principal
        lacks ``DESCRIBE`` on it, so it is hidden and whether it exists is unknown (``exists`` is
        ``False`` and nothing else was read).
    """

    name: str
    exists: bool
    partitions: int | None = None
    replication_factor: int | None = None
    min_insync_replicas: int | None = None
    cleanup_policy: str | None = None
    retention_ms: int | None = None
    unclean_leader_election: bool | None = None
    retention_bytes: int | None = None
    refused: bool = False


@dataclass(frozen=True)
class InternalTopicFacts:
    """What the cluster says about an internal topic, ``__transaction_state`` or ``__consumer_offsets``.

    Kafka creates it on first use with the brokers' replication factor; from then on what
    matters is its replicas and in-sync replicas, not the brokers' settings.

    :param name: the topic.
    :param exists: whether the cluster has it.
    :param replicas: per partition, how many replicas it has.
    :param in_sync: per partition, how many of them are in sync.
    :param min_insync_replicas: its ``min.insync.replicas``; ``None``: not read (the reason is in
        :attr:`PreflightFacts.unavailable` under the topic's name).
    """

    name: str
    exists: bool
    replicas: Mapping[int, int] = field(default_factory=dict)
    in_sync: Mapping[int, int] = field(default_factory=dict)
    min_insync_replicas: int | None = None


@dataclass(frozen=True)
class CheckpointFacts:
    """What the checkpoint location holds.

    :param location: the spec's ``checkpoint_location``.
    :param exists: whether a checkpoint is there.
    :param query_id: the query id from ``metadata`` (``None`` when there is no checkpoint).
    :param last_committed: the newest batch with a ``commits/`` file.
    :param last_planned: the newest batch with an ``offsets/`` file.
    :param writers_choice: the writer the query recorded at its start (``eos/writers.json``);
        ``None``: none recorded, or, with ``writers_choice`` in :attr:`PreflightFacts.unavailable`,
        not readable.
    """

    location: str
    exists: bool
    query_id: str | None = None
    last_committed: int | None = None
    last_planned: int | None = None
    writers_choice: WritersChoice | None = None


@dataclass(frozen=True)
class PreflightFacts:
    """Everything the rules look at. ``None`` means "not read": rules needing it are not checked.

    :param spec: the pipeline under test.
    :param broker_configs: per live broker id, its configuration (name -> value as the admin
        API reports it; ``None`` for sensitive or unset values).
    :param live_brokers: how many brokers the cluster metadata lists as alive.
    :param topics: the pipeline's topics (inputs, output, dead-letter) by name. A pipeline topic
        missing from the mapping was not read.
    :param internal_topics: ``__transaction_state`` and ``__consumer_offsets`` by name; one missing
        from the mapping was not read (whether it exists is unknown; the reason is in ``unavailable``
        under its name).
    :param group_state: the sink group's state (``EMPTY``, ``STABLE``, ``DEAD`` ...).
    :param group_members: the sink group's live members, described for people.
    :param group_offsets: the sink group's committed offsets and metadata per input partition.
    :param transactions: transactions under the pipeline's prefix as their coordinators
        describe them (ids outside the prefix are ignored).
    :param observed_at: when the cluster was read (for transaction ages).
    :param other_specs: the other pipelines known (for sharing checks); ``()`` means "none".
    :param checkpoint: what the checkpoint location holds.
    :param master: the Spark master URL the job will be submitted to.
    :param producer_config: the sink producer's librdkafka config as the sink builds it
        (:func:`airflow_provider_eos.kafka.settings.sink_producer_config`).
    :param longest_expected_pause_ms: the longest the pipeline may be stopped and still resume.
    :param transform_traits: what the spec's transform declares about itself (the
        ``stateful_transform`` marker), read from its source without Spark.
    :param permissions: what the job principal may do (EOS5xx), learned from its ACLs or by probes.
    :param executor_writer_jar: where the JVM executor writer's jar is on this machine, the one that
        submits the job (EOS318); ``None`` with the reason in ``unavailable`` when it is missing or stale.
    :param broker_protocol: the request versions and feature levels a broker announced (EOS213-EOS215).
    :param unavailable: why a fact is ``None`` (fact name -> reason), shown in "not checked".
    """

    spec: PipelineSpec
    broker_configs: Mapping[int, Mapping[str, str | None]] | None = None
    live_brokers: int | None = None
    topics: Mapping[str, TopicFacts] | None = None
    internal_topics: Mapping[str, InternalTopicFacts] | None = None
    group_state: str | None = None
    group_members: tuple[str, ...] | None = None
    group_offsets: CommittedOffsets | None = None
    transactions: tuple[Transaction, ...] | None = None
    observed_at: dt.datetime | None = None
    other_specs: tuple[PipelineSpec, ...] | None = None
    checkpoint: CheckpointFacts | None = None
    master: str | None = None
    producer_config: Mapping[str, Any] | None = None
    longest_expected_pause_ms: int = DEFAULT_LONGEST_EXPECTED_PAUSE_MS
    transform_traits: TransformTraits | None = None
    permissions: PermissionFacts | None = None
    executor_writer_jar: str | None = None
    broker_protocol: BrokerProtocol | None = None
    unavailable: Mapping[str, str] = field(default_factory=dict)
