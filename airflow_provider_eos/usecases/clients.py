"""The clients and readers a use case works through, built the same way by every shell.

A shell (the CLI, an operator) makes one :class:`PipelineClients` per call from the spec and the
checkpoint storage options it has: the CLI has the worker's ambient credentials (``{}``), an
operator the options of its checkpoint connection. Every use case then reads the checkpoint and
Kafka through it, so no use case can be called with the credentials of one shell missing.

Kafka is reached through it too, and asked first whether any broker answers
(:meth:`PipelineClients.require_kafka`, the probe of :mod:`airflow_provider_eos.kafka.reachability`):
a cluster that is down fails every use case within ``connect_timeout_s`` with one
:class:`~airflow_provider_eos.core.errors.KafkaUnreachableError`, the same sentence in the CLI and
in a task log. A use case that needs no Kafka (a rewind's dry run to a given batch) never probes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.core.offsets_expiry import RetentionReading
from airflow_provider_eos.core.secrets import redact_config
from airflow_provider_eos.kafka.group_offset_commit import commit_group_offsets
from airflow_provider_eos.kafka.group_offset_fetch import read_group_offsets
from airflow_provider_eos.kafka.group_offsets import (
    read_committed_offsets,
    verification_partitions,
    write_committed_offsets,
)
from airflow_provider_eos.kafka.reachability import DEFAULT_CONNECT_TIMEOUT_S
from airflow_provider_eos.kafka.settings import admin_config, kafka_python_can_take

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

    from airflow_provider_eos.core.markers import CommittedOffsets
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.core.topic_partition import TopicPartition
    from airflow_provider_eos.core.transactions import Transaction

__all__ = ["DEFAULT_CONNECT_TIMEOUT_S", "DEFAULT_TIMEOUT_S", "PipelineClients"]

#: Per Kafka admin request.
DEFAULT_TIMEOUT_S = 30.0


@dataclass
class PipelineClients:
    """One pipeline's spec with the Kafka admin client and checkpoint reader its use cases need.

    :param spec: the pipeline.
    :param storage_options: fsspec options for the checkpoint location (credentials ...); ``{}``
        means the ambient credentials.
    :param timeout_s: per Kafka admin request.
    :param connect_timeout_s: how long the first contact waits for any broker to answer.
    """

    spec: PipelineSpec
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S

    def __repr__(self) -> str:
        # The storage options hold credentials (an account key, a token): shown redacted.
        return (f"{type(self).__name__}(spec={self.spec!r}, storage_options={redact_config(self.storage_options)!r}, "
                f"timeout_s={self.timeout_s!r}, connect_timeout_s={self.connect_timeout_s!r})")

    @classmethod
    def from_spec_file(
        cls, spec_file: str | Path, *, connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    ) -> PipelineClients:
        """The clients of the pipeline in ``spec_file``, with the ambient storage credentials (the CLI's way).

        :raises SpecError: if the file is missing or invalid.
        """
        from airflow_provider_eos.core.spec import PipelineSpec

        return cls(PipelineSpec.load(spec_file), connect_timeout_s=connect_timeout_s)

    @cached_property
    def admin(self) -> AdminClient:
        """A confluent-kafka admin client on the spec's connection settings, made on first use once a broker answered.

        :raises KafkaUnreachableError: no broker answered within ``connect_timeout_s``.
        :raises KafkaLoginError: the cluster refused the login (naming the user) instead of timing out later.
        """
        from airflow_provider_eos.kafka.reachability import reachable_admin

        return reachable_admin("admin", admin_config(self.spec), timeout_s=self.connect_timeout_s)

    def __enter__(self) -> PipelineClients:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Destroy the admin client if one was made (:func:`~airflow_provider_eos.kafka.login.destroy_admin`): in the
        owner's thread, never on a librdkafka thread through the garbage collector. The next use makes a new one."""
        admin = self.__dict__.pop("admin", None)
        if admin is not None:
            from airflow_provider_eos.kafka.login import destroy_admin

            destroy_admin(admin)

    def require_kafka(self) -> None:
        """Fail now, within ``connect_timeout_s``, unless a broker answers: call before any Kafka client of a use case.

        Probed once per :class:`PipelineClients`; the admin client it made serves the use case's requests.

        :raises KafkaUnreachableError: no broker answered.
        :raises KafkaLoginError: the cluster refused the login.
        """
        self.admin  # noqa: B018  # made (and probed) on first use, then cached

    @cached_property
    def checkpoint(self) -> CheckpointReader:
        """The reader of the spec's checkpoint, with the storage options."""
        return CheckpointReader(self.spec.checkpoint_location, dict(self.storage_options) or None)

    def existing_checkpoint(self) -> CheckpointReader:
        """The checkpoint reader, for a repair: a checkpoint that does not exist cannot be repaired.

        :raises CheckpointError: if there is no checkpoint at the spec's location.
        """
        if not self.checkpoint.exists():
            # A mistyped location must not read as "nothing to repair".
            raise CheckpointError(
                f"no Spark checkpoint at {self.spec.checkpoint_location!r} (no metadata file, no offsets) "
                f"for pipeline {self.spec.name!r}",
                fix="check the spec's checkpoint_location; a pipeline that never ran has nothing to repair",
            )
        return self.checkpoint

    def committed_offsets(self) -> CommittedOffsets:
        """The sink group's committed offsets and markers on every partition a verification compares
        (:func:`~airflow_provider_eos.kafka.group_offsets.verification_partitions`), read stable.

        Over kafka-python (design note 85): librdkafka's read aborts the process when its connection drops, and
        verification runs in front of an on-call engineer, while brokers misbehave.

        :raises KafkaNoAnswerError: a request got no answer in time, naming the spec's brokers (retryable).
        :raises GroupOffsetsError: offsets still pending after a transaction's longest life, or the read failed.
        :raises TransactionsAdminError: kafka-python could not connect where librdkafka had.
        """
        self.require_kafka()
        spec = self.spec
        partitions = verification_partitions(self.admin, spec, self.checkpoint, timeout_s=self.timeout_s)
        if not partitions:
            return {}
        if not kafka_python_can_take(spec.kafka):
            # Settings kafka-python cannot take (SASL OAUTHBEARER): librdkafka's read, as before note 85.
            return read_committed_offsets(self.admin, spec.group_id, partitions, brokers=spec.brokers,
                                          transaction_timeout_ms=spec.transaction_timeout_ms, timeout_s=self.timeout_s)
        with self.transactions_admin() as admin:
            return read_group_offsets(admin, spec.group_id, partitions,
                                      transaction_timeout_ms=spec.transaction_timeout_ms, observer=False)

    def commit_offsets(self, offsets: Mapping[TopicPartition, tuple[int, str]]) -> None:
        """Commit ``{partition: (offset, metadata)}`` to the sink group, which must have no members (the repairs).

        Over kafka-python (design note 88), as the group's reads: librdkafka's AlterConsumerGroupOffsets aborts the
        process when its connection drops, and the repairs run while brokers misbehave.

        :raises KafkaWriteNoAnswerError: the write got no answer: it may have gone through (verify first).
        :raises AclMissingError: the principal may not commit to the group or the topics.
        :raises GroupOffsetsError: the group refused the offsets, or the coordinator stayed unavailable.
        """
        self.require_kafka()
        spec = self.spec
        if not kafka_python_can_take(spec.kafka):
            # Settings kafka-python cannot take (SASL OAUTHBEARER): librdkafka's write, as before note 88.
            write_committed_offsets(self.admin, spec.group_id, offsets, timeout_s=self.timeout_s, brokers=spec.brokers)
            return
        with self.transactions_admin() as admin:
            commit_group_offsets(admin, spec.group_id, offsets, timeout_s=self.timeout_s)

    def offsets_retention(self) -> RetentionReading:
        """The brokers' ``offsets.retention.minutes`` as of now, for the expiry of a batch in flight (note 55).

        A refused or failed read is kept with its reason: verification then takes the group's offsets as
        possibly expired, as the sink does.
        """
        from confluent_kafka import KafkaException

        from airflow_provider_eos.kafka.broker_configs import offsets_retention_minutes

        self.require_kafka()
        try:
            minutes = offsets_retention_minutes(self.admin, self.timeout_s)
        except (KafkaException, TimeoutError) as exc:
            return RetentionReading(None, dt.datetime.now(dt.UTC), f"DescribeConfigs of the brokers failed: {exc}")
        return RetentionReading(minutes, dt.datetime.now(dt.UTC))

    @contextlib.contextmanager
    def transactions_admin(self) -> Iterator[KafkaAdminClient]:
        """A kafka-python admin client for the transaction calls (KIP-664) and the group's offsets, closed on exit.

        Not cached as :attr:`admin` is: confluent-kafka has none of these calls, and the
        kafka-python client holds sockets a use case should give back when it is done.

        :raises TransactionsAdminError: if no broker can be reached.
        """
        from airflow_provider_eos.kafka.transactions_admin import admin_client

        with admin_client(self.spec, timeout_ms=int(self.timeout_s * 1000)) as admin:
            yield admin

    def transactions_under_prefix(self) -> list[Transaction]:
        """The transactions listed under the spec's transactional id prefix (the liveness gate's second sign)."""
        from airflow_provider_eos.kafka.transactions_admin import scan_prefix

        self.require_kafka()
        with self.transactions_admin() as admin:
            return scan_prefix(admin, self.spec.transactional_id_prefix)

