"""The pipeline spec model: its fields, their validation, derived values and (de)serialization.

Pydantic runs the field validators in field order, so a later field's rule sees the earlier
fields (``output_topic`` is checked against ``input_topics``). The validators only route each
field to its rule: the topics' in :mod:`.topic_rules`, the ``kafka`` config's in :mod:`.kafka_keys`,
the others' in :mod:`.field_rules` (and :mod:`.health_thresholds`, :mod:`.submission`). The
sink's enumerated settings are :mod:`.sink_modes`; reading a file is :mod:`.document`, and
turning pydantic's errors into one :class:`SpecError` is :mod:`.validation_errors`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from airflow_provider_eos.core import transactional_ids
from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.kafka_defaults import KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from airflow_provider_eos.core.secrets import redact_config, redact_text
from airflow_provider_eos.core.spec import field_rules
from airflow_provider_eos.core.spec.bounded_yaml import LocationMap
from airflow_provider_eos.core.spec.document import read_spec_document
from airflow_provider_eos.core.spec.field_rules import TRIGGER_AVAILABLE_NOW, parse_interval_ms
from airflow_provider_eos.core.spec.health_thresholds import check_health_thresholds
from airflow_provider_eos.core.spec.kafka_keys import check_kafka_keys, check_kafka_value_types
from airflow_provider_eos.core.spec.observability import MetricsSettings
from airflow_provider_eos.core.spec.sink_modes import ExecutorWriter, Mode, Writers
from airflow_provider_eos.core.spec.submission import Connector, check_python_environment
from airflow_provider_eos.core.spec.topic_rules import (
    check_dlq_topic,
    check_input_topics,
    check_output_topic,
    check_starting_offsets,
)
from airflow_provider_eos.core.spec.validation_errors import spec_error

__all__ = ["PipelineSpec"]


class PipelineSpec(BaseModel):
    """One exactly-once Kafka -> Spark -> Kafka pipeline.

    Build it in Python (``PipelineSpec(name=..., ...)``), from a mapping (:meth:`from_dict`) or
    from a file (:meth:`load`). Any invalid value raises :class:`SpecError` naming the field.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Pipeline name; DAG and task ids derive from it.
    name: str
    #: librdkafka client config shared by source, sink and admin; must hold ``bootstrap.servers``.
    kafka: dict[str, str | int | bool]
    #: Topics the Spark Kafka source subscribes to.
    input_topics: list[str]
    #: Topic the sink produces to, transactionally.
    output_topic: str
    #: Optional dead-letter topic, produced to in the same transaction.
    dlq_topic: str | None = None
    #: The sink group: holds the offsets committed inside transactions, with batch markers.
    group_id: str
    #: Prefix of the sink's transactional ids: ``<prefix>-0`` for the driver writer, ``<prefix>-<t>_<p>`` for the
    #: executor writer of partition ``p`` of the ``t``-th input topic (counted from 0).
    transactional_id_prefix: str
    #: Spark checkpoint location: an absolute local path or a URL with a scheme (``hdfs://``, ``s3a://`` (read
    #: as ``s3://``), ``file://`` ...); relative paths are refused.
    checkpoint_location: str
    #: ``"available_now"`` or a processing-time interval such as ``"10 seconds"``; ``"0 seconds"`` starts each
    #: batch as soon as the previous one ended (Spark's own default trigger).
    trigger: str = TRIGGER_AVAILABLE_NOW
    #: Spark ``maxOffsetsPerTrigger``: the most input records per batch; ``null`` for no limit.
    max_offsets_per_trigger: int | None = 10000
    #: Spark ``startingOffsets``: ``"earliest"``, ``"latest"`` or a JSON ``{"topic":{"0":42}}`` naming every
    #: input topic.
    starting_offsets: str = "earliest"
    #: Producer ``transaction.timeout.ms`` of the sink, from 1000 (librdkafka's least) to 2^31 - 1. A stable read of
    #: the sink group's offsets waits this long plus 30 s for a pending transactional commit.
    transaction_timeout_ms: int = 60000
    #: ``"module:function"`` applied to the input DataFrame; ``null`` passes rows through.
    transform: str | None = None
    #: Extra Spark configuration for the job.
    spark_conf: dict[str, str] = {}
    #: Expected longest batch duration, checked against the transaction timeout before start.
    batch_budget_ms: int | None = None
    #: Delivery guarantee of the sink.
    mode: Mode = Mode.EXACTLY_ONCE
    #: Where the exactly-once sink writes: ``auto`` decides from the query's plan at start,
    #: ``driver`` is one transaction per batch, ``executors`` one per input partition.
    writers: Writers = Writers.AUTO
    #: What runs the exactly-once sink's tasks on the executors (the executor writers' tasks, and the
    #: driver writer's spill tasks): ``jvm`` (the default: Java data-source writers in the executor
    #: JVMs, whose producers outlive tasks and which start no Python worker; needs the writer's jar,
    #: which ``make install`` builds) or ``python`` (PySpark's Python workers; the plan reader is in the
    #: jar too, so a machine without it runs ``python`` with ``writers: driver`` only). Why JVM by
    #: default: docs/design-notes.md.
    executor_writer: ExecutorWriter = ExecutorWriter.JVM
    #: How Spark's Kafka connector reaches the cluster (jars by path/URL or Maven packages); ``null``:
    #: the jars the devstack resolved on this machine (``eos jars``).
    connector: Connector | None = None
    #: A packed Python environment (``eos package``) shipped with ``--archives``: executors run its
    #: interpreter instead of the submitting machine's; ``null``: the submitting machine's interpreter.
    python_environment: str | None = None
    #: Seconds the driver's lease in the checkpoint (``eos/driver-lease.json``) holds after each renewal;
    #: the driver renews it every third of that and commits nothing once it could not for four fifths
    #: of it. Recovery counts a driver gone by its lease this long (plus a clock margin of 10 s) after its
    #: last renewal, from any Airflow worker. From 3 to 3600 (recovery after a crash waits that long).
    driver_lease_ttl_s: int = 30
    #: ``{prometheus_port: PORT}``: the driver serves the sink's metrics (and, by default, turns on
    #: Spark's streaming metrics) for Prometheus while it runs (docs/observability.md); ``null``: none.
    metrics: MetricsSettings | None = None
    #: Health thresholds replacing those derived from the spec (docs/runbook.md, "Health"): ``warn_after_ms``,
    #: ``stop_after_ms``, ``hang_after_ms``, ``input_hang_after_ms``, ``lingering_after_ms`` (milliseconds),
    #: ``min_samples``. The health sensor's ``thresholds`` and ``eos health --threshold`` still win over them.
    health_thresholds: dict[str, int] = {}

    # -- field validation (pydantic runs these in field order, so later fields see earlier ones) --

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        return field_rules.check_name(value)

    @field_validator("max_offsets_per_trigger", "transaction_timeout_ms", "batch_budget_ms", "driver_lease_ttl_s",
                     mode="before")
    @classmethod
    def _reject_bool(cls, value: Any, info: ValidationInfo) -> Any:
        return field_rules.reject_bool(value, info.field_name)

    @field_validator("kafka", mode="before")
    @classmethod
    def _check_kafka_types(cls, value: Any) -> Any:
        return check_kafka_value_types(value)

    @field_validator("kafka")
    @classmethod
    def _check_kafka(cls, value: dict[str, str | int | bool]) -> dict[str, str | int | bool]:
        return check_kafka_keys(value)

    @field_validator("input_topics")
    @classmethod
    def _check_input_topics(cls, value: list[str]) -> list[str]:
        return check_input_topics(value)

    @field_validator("output_topic")
    @classmethod
    def _check_output_topic(cls, value: str, info: ValidationInfo) -> str:
        return check_output_topic(value, info.data.get("input_topics") or [])

    @field_validator("dlq_topic")
    @classmethod
    def _check_dlq_topic(cls, value: str | None, info: ValidationInfo) -> str | None:
        return check_dlq_topic(value, info.data.get("output_topic"), info.data.get("input_topics") or [])

    @field_validator("group_id")
    @classmethod
    def _check_group_id(cls, value: str) -> str:
        return field_rules.check_group_id(value)

    @field_validator("transactional_id_prefix")
    @classmethod
    def _check_prefix(cls, value: str) -> str:
        return field_rules.check_transactional_id_prefix(value)

    @field_validator("checkpoint_location")
    @classmethod
    def _check_checkpoint_location(cls, value: str) -> str:
        return field_rules.check_checkpoint_location(value)

    @field_validator("trigger")
    @classmethod
    def _check_trigger(cls, value: str) -> str:
        return field_rules.check_trigger(value)

    @field_validator("max_offsets_per_trigger", "batch_budget_ms")
    @classmethod
    def _check_positive_or_none(cls, value: int | None, info: ValidationInfo) -> int | None:
        return field_rules.check_positive_or_none(value, info.field_name)

    @field_validator("transaction_timeout_ms")
    @classmethod
    def _check_transaction_timeout(cls, value: int) -> int:
        return field_rules.check_transaction_timeout(value, KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS)

    @field_validator("driver_lease_ttl_s")
    @classmethod
    def _check_lease_ttl(cls, value: int, info: ValidationInfo) -> int:
        return field_rules.check_driver_lease_ttl(value, info.field_name)

    @field_validator("starting_offsets")
    @classmethod
    def _check_starting_offsets(cls, value: str, info: ValidationInfo) -> str:
        return check_starting_offsets(value, info.data.get("input_topics") or [])

    @field_validator("transform")
    @classmethod
    def _check_transform(cls, value: str | None) -> str | None:
        return field_rules.check_transform(value)

    @field_validator("python_environment")
    @classmethod
    def _check_python_environment(cls, value: str | None) -> str | None:
        return check_python_environment(value)

    @field_validator("health_thresholds", mode="before")
    @classmethod
    def _check_health_thresholds(cls, value: Any) -> Any:
        return check_health_thresholds(value)

    @field_validator("spark_conf", mode="before")
    @classmethod
    def _stringify_spark_conf(cls, value: Any) -> Any:
        return field_rules.stringify_spark_conf(value)

    @field_validator("spark_conf")
    @classmethod
    def _check_spark_conf(cls, value: dict[str, str]) -> dict[str, str]:
        return field_rules.check_spark_conf(value)

    # -- display -------------------------------------------------------------------------------

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # repr() and str() reach tracebacks, logs and assertion messages: secret settings (by name
        # or value) show as ***. to_dict()/model_dump() keep them: the job needs them.
        for name, value in super().__repr_args__():
            if name in ("kafka", "spark_conf") and isinstance(value, Mapping):
                yield name, redact_config(value)
            elif isinstance(value, str):
                yield name, redact_text(value)
            else:
                yield name, value

    # -- derived values -----------------------------------------------------------------------

    @property
    def trigger_interval_ms(self) -> int | None:
        """The processing-time interval in milliseconds; ``None`` for ``available_now``."""
        if self.trigger == TRIGGER_AVAILABLE_NOW:
            return None
        return parse_interval_ms(self.trigger)

    @property
    def brokers(self) -> str:
        """The ``bootstrap.servers`` the pipeline's Kafka clients start from, as its errors name them."""
        return str(self.kafka.get("bootstrap.servers"))

    def ships_jvm_jar(self, mode: Mode | str | None = None) -> bool:
        """Whether the ``jvm/`` module's jar must go with the job: an exactly-once run that reads the
        batch's plan (``writers`` ``auto`` or ``executors``: the plan reader is in the jar) or may run
        the JVM writer (``executor_writer: jvm``: the executor writers' tasks, the driver writer's
        spill tasks).

        :param mode: the run's mode when it is not the spec's (``eos run --mode``; a plug-in's mode
            is none of the spec's): an at-least-once run of an exactly-once spec needs no jar.
        """
        reads_plan = self.writers is not Writers.DRIVER
        return (mode or self.mode) == Mode.EXACTLY_ONCE and (reads_plan or self.executor_writer is ExecutorWriter.JVM)

    def transactional_id(self, writer_index: int = 0) -> str:
        """The transactional id of writer ``writer_index`` (``0``: the driver-mode producer)."""
        return transactional_ids.transactional_id(self.transactional_id_prefix, writer_index)

    def partition_transactional_id(self, topic: str, partition: int) -> str:
        """The transactional id of the executor writer of input partition ``topic``-``partition``.

        :raises SpecError: if ``topic`` is not one of the spec's input topics.
        """
        if topic not in self.input_topics:
            raise SpecError(
                f"topic {topic!r} is not an input topic of pipeline {self.name!r} ({', '.join(self.input_topics)})",
                fix="executor writers write only for the spec's input_topics; check the checkpoint is this spec's",
            )
        return transactional_ids.partition_transactional_id(
            self.transactional_id_prefix, self.input_topics.index(topic), partition
        )

    # -- construction and serialization --------------------------------------------------------

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, source: str | None = None, locations: LocationMap | None = None
    ) -> PipelineSpec:
        """Validate a mapping into a spec.

        :param data: the spec's fields.
        :param source: where ``data`` came from (a file name), named in errors.
        :param locations: where each key is in that file (line, column), named in errors.
        :raises SpecError: naming every invalid field, where it is and the fix, never a secret or a
            mistyped value.
        """
        where = f" in {source}" if source else ""
        if not isinstance(data, Mapping):
            raise SpecError(
                f"pipeline spec{where} is a {type(data).__name__}, not a mapping of fields",
                fix="write the spec as a mapping (YAML keys or a JSON object) of field: value",
            )
        try:
            return cls.model_validate(dict(data))
        except ValidationError as err:
            raise spec_error(err, data, source, list(PipelineSpec.model_fields), locations) from None

    @classmethod
    def load(cls, path: str | Path) -> PipelineSpec:
        """Read a spec from a ``.yaml``, ``.yml`` or ``.json`` file.

        :raises SpecError: naming the file (and the line and column) if it is missing, unreadable,
            malformed or invalid.
        """
        file = Path(path)
        document = read_spec_document(file)
        return cls.from_dict(document.data, source=str(file), locations=document.locations)

    def to_dict(self) -> dict[str, Any]:
        """Every field (defaults included) as plain JSON-compatible values; :meth:`from_dict` inverts it."""
        return self.model_dump(mode="json")

    def to_json(self, *, indent: int | None = None) -> str:
        """The spec as JSON; :meth:`from_dict` of ``json.loads`` of it gives an equal spec."""
        return json.dumps(self.to_dict(), indent=indent)

    def with_overrides(self, **overrides: Any) -> PipelineSpec:
        """A new, fully validated spec with some fields replaced.

        :raises SpecError: if an override names an unknown field or breaks validation.
        """
        return type(self).from_dict({**self.to_dict(), **overrides}, source=f"overrides of {self.name!r}")
