"""Pre-flight validation (docs/preflight-rules.md): a catalog of rules run before a pipeline starts.

Every rule has a stable code, a severity and a fix. Codes group by area, one module each:

``EOS1xx`` (:mod:`.timeouts`)
    timeouts: trigger interval and batch budget < producer ``transaction.timeout.ms`` <= broker
    ``transaction.max.timeout.ms``; ``message.timeout.ms`` <= ``transaction.timeout.ms``;
    ``transactional.id.expiration.ms`` and ``offsets.retention.minutes`` vs the longest expected pause.
``EOS2xx`` (:mod:`.internal_topics`, :mod:`.cluster_topics`)
    the Kafka cluster and the pipeline's topics: the internal topics' in-sync replicas vs their
    ``min.insync.replicas`` (before they exist: the brokers' replication factor vs live brokers);
    topics exist, replication factor, ``min.insync.replicas``, cleanup policy, retention.
``EOS3xx`` (:mod:`.spark_checkpoint`)
    Spark and the checkpoint: ``read_committed`` source, ``failOnDataLoss``, no async progress
    tracking, ``maxOffsetsPerTrigger``, durable checkpoint storage, the checkpoint belongs to
    this pipeline, ``spark.sql.streaming.minBatchesToRetain`` keeps what verify and rewind read;
    and (:mod:`.writers`, EOS313-EOS318) the writers as far as they can be told without Spark:
    executor writers only in exactly-once mode and with a transform that does not declare itself
    stateful, their control-record cost, the writer recorded in the checkpoint vs the spec's, and no
    driver writer spilling onto a one-host path under a cluster master; and
    (:mod:`.transform_module`, EOS319) the transform named by its current module path.
``EOS4xx`` (:mod:`.naming_ownership`)
    naming and ownership: the sink group has no live members, no lingering transactions under
    the prefix, nothing shared with another pipeline spec.
``EOS5xx`` (:mod:`.security`)
    security and ACLs: the job's principal holds every ACL of the job's set (``eos acls``),
    found by describing its ACLs or by harmless probes.

The rule model (:mod:`.rule`: rule, severity, status, finding, registration), the facts the
rules read (:mod:`.facts`), the catalog and :func:`evaluate` (:mod:`.catalog`) and the report
(:mod:`.report`) are modules of their own.

The input is a plain :class:`PreflightFacts`: the spec plus whatever was read from the cluster,
the checkpoint and the other specs. A fact that is ``None`` was not read; every rule that needs
it reports :attr:`Status.NOT_CHECKED` instead of passing silently. A report is
:attr:`~PreflightReport.ok` when no ``ERROR`` rule failed.

This package is pure: the facts are gathered live by
:mod:`airflow_provider_eos.kafka.cluster_facts`.
"""

from __future__ import annotations

from airflow_provider_eos.core.preflight.catalog import RULES, evaluate
from airflow_provider_eos.core.preflight.facts import (
    DEFAULT_LONGEST_EXPECTED_PAUSE_MS,
    KAFKA_BROKER_DEFAULTS,
    CheckpointFacts,
    InternalTopicFacts,
    PreflightError,
    PreflightFacts,
    TopicFacts,
)
from airflow_provider_eos.core.preflight.readings import RECOMMENDED_REPLICATION
from airflow_provider_eos.core.preflight.report import PreflightReport
from airflow_provider_eos.core.preflight.rule import Finding, Rule, Severity, Status, rule
from airflow_provider_eos.core.preflight.timeouts import HEADROOM_FRACTION
from airflow_provider_eos.core.preflight.writers import CONTROL_RECORD_SHARE_LIMIT, control_records_per_batch

__all__ = [
    "CONTROL_RECORD_SHARE_LIMIT",
    "DEFAULT_LONGEST_EXPECTED_PAUSE_MS",
    "HEADROOM_FRACTION",
    "KAFKA_BROKER_DEFAULTS",
    "RECOMMENDED_REPLICATION",
    "RULES",
    "CheckpointFacts",
    "Finding",
    "InternalTopicFacts",
    "PreflightError",
    "PreflightFacts",
    "PreflightReport",
    "Rule",
    "Severity",
    "Status",
    "TopicFacts",
    "control_records_per_batch",
    "evaluate",
    "rule",
]
