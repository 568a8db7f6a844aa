"""Gather the pre-flight facts live: the cluster through the admin API, the checkpoint, the other specs.

Broker and topic configs come from DescribeConfigs, live brokers from DescribeCluster,
partitions and replicas from the metadata (the internal topics' in-sync replicas too; a pipeline
topic the metadata leaves out is asked about by name, :mod:`~airflow_provider_eos.kafka.topic_reads`,
since Kafka hides a topic from a principal without DESCRIBE on it), the sink
group from DescribeGroups and its committed offsets with batch markers (both over kafka-python), transactions
under the prefix from the KIP-664 admin calls (:mod:`airflow_provider_eos.kafka.transactions_admin`),
the checkpoint through :class:`~airflow_provider_eos.core.checkpoint.CheckpointReader`. The
topics' reads are :mod:`airflow_provider_eos.kafka.topic_facts`'s.

Only an unreachable cluster stops the gathering (:class:`~airflow_provider_eos.core.preflight.
PreflightError`): without it nothing can be checked. Any other read that fails (an ACL
refusing DescribeConfigs, a malformed checkpoint, an invalid spec among the others) leaves
that fact ``None`` with the reason in :attr:`PreflightFacts.unavailable`, so the rules
needing it report "not checked" and the rest still run (:mod:`airflow_provider_eos.kafka.fact_gaps`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException

from airflow_provider_eos.core.acls import PermissionFacts, is_secured, principal_of, required_acls
from airflow_provider_eos.core.broker_protocol import BrokerProtocol
from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import EosError, RetryExhaustedError
from airflow_provider_eos.core.markers import CommittedOffsets
from airflow_provider_eos.core.preflight import (
    DEFAULT_LONGEST_EXPECTED_PAUSE_MS,
    CheckpointFacts,
    InternalTopicFacts,
    PreflightError,
    PreflightFacts,
    TopicFacts,
)
from airflow_provider_eos.core.spec import PipelineSpec, load_specs
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import Transaction
from airflow_provider_eos.kafka.acl_probes import read_permissions
from airflow_provider_eos.kafka.broker_configs import describe_broker_configs
from airflow_provider_eos.kafka.broker_protocol import read_broker_protocol
from airflow_provider_eos.kafka.fact_gaps import FactGaps, reason
from airflow_provider_eos.kafka.group_description import describe_group
from airflow_provider_eos.kafka.group_offset_fetch import read_group_offsets
from airflow_provider_eos.kafka.login import connected_admin, destroy_admin
from airflow_provider_eos.kafka.retriable import COORDINATOR_LOADING
from airflow_provider_eos.kafka.settings import admin_config, kafka_python_can_take, sink_producer_config
from airflow_provider_eos.kafka.topic_facts import TopicReads
from airflow_provider_eos.kafka.transactions_admin import admin_client, scan_prefix

__all__ = ["gather_facts", "load_other_specs"]


def load_other_specs(specs_dir: str | Path) -> tuple[PipelineSpec, ...]:
    """Every pipeline spec in ``specs_dir`` (the spec under test may be among them; rules skip it).

    :raises SpecError: if the folder is missing or holds an invalid spec.
    """
    return tuple(load_specs(specs_dir))


class _Gatherer:
    """One pre-flight's reads; each method fills its facts or records why it could not."""

    def __init__(self, spec: PipelineSpec, timeout_s: float) -> None:
        self.spec = spec
        self.timeout_s = timeout_s
        self.admin = connected_admin("admin", admin_config(spec))
        self.gaps = FactGaps()
        self.topic_reads = TopicReads(self.admin, timeout_s, self.gaps)

    def cluster(self) -> list[int]:
        """Live broker ids; the one read whose failure ends the pre-flight."""
        try:
            # Metadata, not DescribeCluster: any live broker answers it, while DescribeCluster goes to the
            # broker the metadata names as controller, which in KRaft may be one that just died.
            brokers = self.admin.list_topics(timeout=self.timeout_s).brokers
        except (KafkaException, TimeoutError) as exc:
            raise PreflightError(
                f"could not describe the Kafka cluster at {self.spec.kafka.get('bootstrap.servers')!r}: "
                f"{reason(exc)}; nothing can be checked",
                fix="check that the brokers are up and reachable with the pipeline's kafka settings (or connection)",
            ) from exc
        return sorted(brokers)

    def broker_configs(self, brokers: Iterable[int]) -> dict[int, dict[str, str | None]] | None:
        try:
            return describe_broker_configs(self.admin, brokers, self.timeout_s)
        except (KafkaException, TimeoutError) as exc:
            self.gaps.missing("broker_configs", exc)
            return None

    def topics(self) -> tuple[dict[str, TopicFacts] | None, dict[str, list[int]]]:
        """Facts of the pipeline's topics, and the partitions of those that exist."""
        names = [
            *self.spec.input_topics,
            self.spec.output_topic,
            *([self.spec.dlq_topic] if self.spec.dlq_topic else []),
        ]
        return self.topic_reads.topics(names)

    def internal_topics(self) -> dict[str, InternalTopicFacts] | None:
        """``__transaction_state`` and ``__consumer_offsets`` (after :meth:`topics`)."""
        return self.topic_reads.internal_topics()

    def group(self) -> tuple[str | None, tuple[str, ...] | None]:
        """The sink group's state and live members; over kafka-python, never librdkafka, whose lost connection
        under this coordinator request aborts the process (design note 87), but for settings kafka-python
        cannot take (SASL OAUTHBEARER), which keep librdkafka's read."""
        if not kafka_python_can_take(self.spec.kafka):
            return self._group_over_librdkafka()
        try:
            with admin_client(self.spec, timeout_ms=int(self.timeout_s * 1000)) as admin:
                return describe_group(admin, self.spec.group_id, timeout_s=self.timeout_s)
        except EosError as exc:
            self.gaps.missing("group", exc)
            return None, None

    def _group_over_librdkafka(self) -> tuple[str | None, tuple[str, ...] | None]:
        group_id = self.spec.group_id

        def describe() -> Any:
            futures = self.admin.describe_consumer_groups([group_id], request_timeout=self.timeout_s)
            return futures[group_id].result(self.timeout_s + 5)

        try:
            # A fresh broker loads __consumer_offsets lazily: describing the group meanwhile fails.
            description = COORDINATOR_LOADING.bounded(timeout_s=self.timeout_s).call(
                describe, what=f"describe group {group_id!r}"
            )
        except (KafkaException, TimeoutError, RetryExhaustedError) as exc:
            self.gaps.missing("group", exc)
            return None, None
        members = tuple(
            f"{member.client_id} on {member.host.lstrip('/')} (member {member.member_id})"
            for member in description.members
        )
        state = getattr(description.state, "name", None) or str(description.state)
        return state, members

    def checkpoint(
        self, storage_options: Mapping[str, Any] | None
    ) -> tuple[CheckpointFacts | None, set[TopicPartition]]:
        """The checkpoint's identity and progress, and the partitions its last batches name."""
        location = self.spec.checkpoint_location
        try:
            reader = CheckpointReader(location, storage_options)
            if not reader.exists():
                return CheckpointFacts(location=location, exists=False), set()
            committed, planned = reader.latest_committed_batch(), reader.latest_planned_batch()
            partitions: set[TopicPartition] = set()
            for batch in {committed, planned} - {None}:
                partitions.update(reader.planned_offsets(batch))
            facts = CheckpointFacts(
                location=location,
                exists=True,
                query_id=reader.query_id(),
                last_committed=committed,
                last_planned=planned,
            )
            return facts, partitions
        except (EosError, OSError) as exc:
            self.gaps.missing("checkpoint", exc)
            return None, set()

    def group_offsets(self, partitions: set[TopicPartition]) -> CommittedOffsets | None:
        try:
            if not partitions:
                return {}
            # kafka-python, never librdkafka: a lost connection under librdkafka's read aborts the process
            # (design note 84).
            with admin_client(self.spec, timeout_ms=int(self.timeout_s * 1000)) as admin:
                return read_group_offsets(admin, self.spec.group_id, partitions,
                                          transaction_timeout_ms=self.spec.transaction_timeout_ms, observer=True)
        except EosError as exc:
            self.gaps.missing("group_offsets", exc)
            return None

    def transactions(self) -> tuple[Transaction, ...] | None:
        try:
            with admin_client(self.spec, timeout_ms=int(self.timeout_s * 1000)) as admin:
                return tuple(scan_prefix(admin, self.spec.transactional_id_prefix))
        except EosError as exc:
            self.gaps.missing("transactions", exc)
            return None

    def broker_protocol(self) -> BrokerProtocol | None:
        try:
            with admin_client(self.spec, timeout_ms=int(self.timeout_s * 1000)) as admin:
                return read_broker_protocol(admin)
        except EosError as exc:
            self.gaps.missing("broker_protocol", exc)
            return None

    def permissions(self) -> PermissionFacts | None:
        """What the spec's principal may do of the job's ACL set (EOS5xx); no principal: nothing to read."""
        principal, note = principal_of(self.spec.kafka)
        if principal is None:
            return PermissionFacts(principal=None, note=note, secured=is_secured(self.spec.kafka))
        try:
            return read_permissions(admin_config(self.spec), principal, required_acls(self.spec, principal, "job"),
                                    timeout_s=self.timeout_s)
        except (KafkaException, EosError, TimeoutError) as exc:
            self.gaps.missing("permissions", exc)
            return None

    def producer_config(self) -> dict[str, Any] | None:
        try:
            return sink_producer_config(self.spec)
        except (ValueError, TypeError) as exc:
            self.gaps.missing("producer_config", exc)
            return None


def gather_facts(  # noqa: PLR0913  # keyword-only options with defaults
    spec: PipelineSpec,
    *,
    other_specs: Iterable[PipelineSpec] | None = None,
    specs_dir: str | Path | None = None,
    master: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    longest_expected_pause_ms: int = DEFAULT_LONGEST_EXPECTED_PAUSE_MS,
    timeout_s: float = 30,
) -> PreflightFacts:
    """Read everything the pre-flight rules look at.

    :param spec: the pipeline (its ``kafka`` dict says how to reach the cluster).
    :param other_specs: other pipelines to check sharing against. With neither this nor
        ``specs_dir`` the sharing rules are not checked; ``()`` means "there are none".
    :param specs_dir: a folder of spec files to add to ``other_specs`` (the spec under test may
        be in it). An invalid spec there makes the sharing rules "not checked", with the reason.
    :param master: the Spark master URL the job will run on; default ``spark.master`` of the
        spec's ``spark_conf``, else unknown.
    :param storage_options: fsspec options for the checkpoint location.
    :param longest_expected_pause_ms: how long the pipeline may be stopped and still resume.
    :param timeout_s: per admin request.
    :raises PreflightError: if the cluster cannot be described at all.
    """
    gatherer = _Gatherer(spec, timeout_s)
    try:
        return _gather(gatherer, spec, storage_options=storage_options, other_specs=other_specs, specs_dir=specs_dir,
                       master=master, longest_expected_pause_ms=longest_expected_pause_ms)
    finally:
        destroy_admin(gatherer.admin)  # in this thread: a read that timed out left its request pending


def _gather(  # noqa: PLR0913  # gather_facts' options, passed on
    gatherer: _Gatherer, spec: PipelineSpec, *, storage_options: Mapping[str, Any] | None,
    other_specs: Iterable[PipelineSpec] | None, specs_dir: str | Path | None, master: str | None,
    longest_expected_pause_ms: int,
) -> PreflightFacts:
    brokers = gatherer.cluster()
    broker_configs = gatherer.broker_configs(brokers)
    topics, partitions = gatherer.topics()
    internal_topics = gatherer.internal_topics()
    group_state, members = gatherer.group()
    checkpoint, checkpoint_partitions = gatherer.checkpoint(storage_options)
    input_partitions = {TopicPartition(t, p) for t in spec.input_topics for p in partitions.get(t, [])}
    # The checkpoint's partitions too: a partition the group committed but the topic lost still tells whose it is.
    group_offsets = gatherer.group_offsets(input_partitions | checkpoint_partitions)
    transactions = gatherer.transactions()
    broker_protocol = gatherer.broker_protocol()
    permissions = gatherer.permissions()
    observed_at = dt.datetime.now(dt.UTC)

    others: tuple[PipelineSpec, ...] | None = None
    if other_specs is not None:
        others = tuple(other_specs)
    if specs_dir is not None:
        try:
            others = (*(others or ()), *load_other_specs(specs_dir))
        except EosError as exc:
            gatherer.gaps.missing("other_specs", exc)
            others = None

    return PreflightFacts(
        spec=spec,
        broker_configs=broker_configs,
        live_brokers=len(brokers),
        topics=topics,
        internal_topics=internal_topics,
        group_state=group_state,
        group_members=members,
        group_offsets=group_offsets,
        transactions=transactions,
        observed_at=observed_at,
        other_specs=others,
        checkpoint=checkpoint,
        master=master or spec.spark_conf.get("spark.master"),
        producer_config=gatherer.producer_config(),
        longest_expected_pause_ms=longest_expected_pause_ms,
        permissions=permissions,
        broker_protocol=broker_protocol,
        unavailable=dict(gatherer.gaps.unavailable),
    )

