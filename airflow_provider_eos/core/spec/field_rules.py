"""The rules for single spec fields that need more than a type: names, topics, trigger, offsets, transform.

Each check takes the field's value and returns it (possibly normalized) or raises
``ValueError("<what is wrong>; <fix>")``; :class:`~airflow_provider_eos.core.spec.PipelineSpec`'s
validators call them and :mod:`.validation_errors` turns the messages into one
:class:`~airflow_provider_eos.core.errors.SpecError`. The rules follow what Kafka and Spark
accept, so a spec that validates here does not fail later inside Spark or Kafka.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "JAVA_INT_MAX",
    "JAVA_LONG_MAX",
    "MIN_TRANSACTION_TIMEOUT_MS",
    "TRIGGER_AVAILABLE_NOW",
    "check_checkpoint_location",
    "check_name",
    "check_spark_conf",
    "check_starting_offsets",
    "check_topic",
    "check_transaction_timeout",
    "check_transform",
    "check_trigger",
    "parse_interval_ms",
    "stringify_spark_conf",
]

TRIGGER_AVAILABLE_NOW = "available_now"

#: The largest Java ``int``: the Kafka producer reads ``transaction.timeout.ms`` as one.
JAVA_INT_MAX = 2**31 - 1
#: The largest Java ``long``: Spark reads ``maxOffsetsPerTrigger`` as one.
JAVA_LONG_MAX = 2**63 - 1
#: The least ``transaction.timeout.ms`` librdkafka takes (its range is 1000..2147483647, CONFIGURATION.md).
#: The Java producer reads any int and the brokers refuse only 0 or less, but the driver writer's producer and
#: the settings check pre-flight and every submission run first are librdkafka's: a smaller timeout never runs.
MIN_TRANSACTION_TIMEOUT_MS = 1000

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
# Kafka's own rule (org.apache.kafka.common.internals.Topic): legal chars and at most 249 long.
_TOPIC_RE = re.compile(r"[A-Za-z0-9._-]{1,249}")
_TRANSFORM_RE = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
)
# Spark parses processing-time triggers as interval strings with full unit names; accepting only
# those keeps a spec that validates here from failing later in DataStreamWriter.trigger().
_INTERVAL_RE = re.compile(r"(?:interval\s+)?(\d+)\s*(millisecond|second|minute|hour|day)s?", re.IGNORECASE)
_UNIT_MS = {"millisecond": 1, "second": 1_000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000}

# A spec's example: the example transforms live in the top-level package ``spark_jobs``.
# A URL's scheme then a path from the root: "hdfs://nn/x", "s3a://bucket/x", "file:///x", "file:/x".
_ROOTED_URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")
_EXAMPLE_CHECKPOINT = "'s3a://bucket/checkpoints/orders' or '/var/lib/eos/checkpoints/orders'"
_EXAMPLE_TRANSFORM = "spark_jobs.transforms.json_enrich:transform"


def parse_interval_ms(text: str) -> int | None:
    """A processing-time interval such as ``"10 seconds"`` in milliseconds; ``None`` if it is not one."""
    match = _INTERVAL_RE.fullmatch(text.strip())
    if match is None:
        return None
    return int(match.group(1)) * _UNIT_MS[match.group(2).lower()]


def check_name(value: str) -> str:
    """The pipeline name is identifier-like: DAG and task ids derive from it."""
    if not _NAME_RE.fullmatch(value):
        raise ValueError(
            f"name {value!r} is not identifier-like; use 1-64 characters from [A-Za-z0-9_-], "
            "starting with a letter or '_'"
        )
    return value


def check_topic(value: str, field: str) -> str:
    """``value`` is a legal Kafka topic name; ``field`` names it in the message."""
    if not isinstance(value, str) or not _TOPIC_RE.fullmatch(value) or value in {".", ".."}:
        raise ValueError(
            f"{field} {value!r} is not a valid Kafka topic name; use 1-249 characters from "
            "[A-Za-z0-9._-], not '.' or '..'"
        )
    return value


def check_trigger(value: str) -> str:
    """The trigger is ``available_now`` or an interval Spark parses."""
    if value != TRIGGER_AVAILABLE_NOW and parse_interval_ms(value) is None:
        raise ValueError(
            f"trigger {value!r} is neither 'available_now' nor an interval; use 'available_now' "
            "or '<number> <unit>' with unit milliseconds, seconds, minutes, hours or days, "
            "e.g. '10 seconds'"
        )
    return value


def check_starting_offsets(value: str, input_topics: list[str]) -> str:
    """``earliest``, ``latest`` or Spark's JSON ``{"topic":{"0":42}}`` naming every input topic and no other.

    :param input_topics: the spec's input topics; empty when they failed validation (then topic
        names are not checked).
    """
    if value in ("earliest", "latest"):
        return value
    example = '\'{"orders":{"0":42,"1":-2}}\''
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        raise ValueError(
            f"starting_offsets {value!r} is not 'earliest', 'latest' or JSON; use one of those, e.g. {example}"
        ) from None
    if not isinstance(parsed, dict) or not parsed:
        raise ValueError(f"starting_offsets {value!r} must be a JSON object of topics, e.g. {example}")
    for topic, partitions in parsed.items():
        _check_topic_offsets(topic, partitions, input_topics, example)
    # Spark asserts that specific offsets cover every subscribed partition ("you must specify all
    # TopicPartitions") when the query starts; a missing topic is the part that shows without the broker.
    missing = [topic for topic in input_topics if topic not in parsed]
    if missing:
        raise ValueError(
            f"starting_offsets gives no offsets for input topics {missing}; Spark needs one for every "
            "partition of every input topic: add them, -2 for earliest or -1 for latest"
        )
    return value


def _check_topic_offsets(topic: str, partitions: Any, input_topics: list[str], example: str) -> None:
    """One topic's entry of ``starting_offsets``: an input topic's object of partition -> offset."""
    if input_topics and topic not in input_topics:
        raise ValueError(
            f"starting_offsets names topic {topic!r}, which is not in input_topics {input_topics}; "
            "list only input topics"
        )
    if not isinstance(partitions, dict) or not partitions:
        raise ValueError(
            f"starting_offsets[{topic!r}] is {partitions!r}; use an object of partition -> "
            f"offset, e.g. {example}"
        )
    for partition, offset in partitions.items():
        # ASCII digits only: Python's int() takes '٣', Spark's JSON reader (String.toInt) refuses it at start.
        ascii_digits = partition.isascii() and partition.isdecimal()
        if not ascii_digits or isinstance(offset, bool) or not isinstance(offset, int):
            raise ValueError(
                f"starting_offsets[{topic!r}][{partition!r}] = {offset!r}; partitions are "
                "decimal strings and offsets integers (-2 earliest, -1 latest)"
            )
        if offset < -2:
            raise ValueError(
                f"starting_offsets[{topic!r}][{partition!r}] = {offset}; use an offset >= 0, "
                "-2 for earliest or -1 for latest"
            )


def check_transaction_timeout(value: int, max_default_ms: int) -> int:
    """``transaction_timeout_ms``: from librdkafka's least to a Java int.

    :param max_default_ms: Kafka's default ``transaction.max.timeout.ms``, which the fix names.
    """
    if value < MIN_TRANSACTION_TIMEOUT_MS:
        raise ValueError(
            f"transaction_timeout_ms is {value}; use at least {MIN_TRANSACTION_TIMEOUT_MS} milliseconds: the sink's "
            f"librdkafka producer takes transaction.timeout.ms in {MIN_TRANSACTION_TIMEOUT_MS}..{JAVA_INT_MAX} and "
            "refuses a shorter one when it starts (60000, the default, suits most pipelines)"
        )
    if value > JAVA_INT_MAX:
        # The producer reads transaction.timeout.ms as an int: a larger value fails at its start.
        raise ValueError(
            f"transaction_timeout_ms is {value}, above the Kafka producer's limit {JAVA_INT_MAX} (a Java int); "
            f"use at most the brokers' transaction.max.timeout.ms ({max_default_ms} by default)"
        )
    return value


def check_checkpoint_location(value: str) -> str:
    """A URL with a scheme or an absolute path: the same checkpoint from every process that reads it.

    Spark resolves a relative location against its default filesystem and working directory, the
    checkpoint reader against each process's own: a recovery task on another Airflow worker would
    find no checkpoint there.
    """
    if not value.strip() or value != value.strip():
        raise ValueError(
            f"checkpoint_location {value!r} is empty or has surrounding spaces; set a durable "
            f"path or URL owned by this pipeline, e.g. {_EXAMPLE_CHECKPOINT}"
        )
    if not value.startswith("/") and not _ROOTED_URL_RE.match(value):
        raise ValueError(
            f"checkpoint_location {value!r} is relative, so Spark and each Airflow worker would look "
            "for it in their own working directory; use a URL with a scheme (hdfs://, s3a://, file://) "
            f"or an absolute path, e.g. {_EXAMPLE_CHECKPOINT}"
        )
    return value


def check_transform(value: str | None) -> str | None:
    """``module:function`` (or ``None``).

    A module under a moved path (``airflow_provider_eos.jobs``) is valid: the job resolves it and
    pre-flight warns (:mod:`airflow_provider_eos.core.transform_reference`); loading a spec stays quiet
    because DAGs load every spec at each parse.
    """
    if value is not None and not _TRANSFORM_RE.fullmatch(value):
        raise ValueError(
            f"transform {value!r} is not 'module:function'; use e.g. '{_EXAMPLE_TRANSFORM}', or null for identity"
        )
    return value


#: Spark settings the job sets from the spec's own fields (each with the field to use instead): the job's
#: value wins, so the same key in ``spark_conf`` would be silently ignored.
JOB_OWNED_SPARK_CONF = {"spark.sql.streaming.checkpointLocation": "checkpoint_location"}


def check_spark_conf(value: dict[str, str]) -> dict[str, str]:
    """Refuse the Spark settings the job sets from the spec's own fields (:data:`JOB_OWNED_SPARK_CONF`)."""
    for key, field in JOB_OWNED_SPARK_CONF.items():
        if key in value:
            raise ValueError(
                f"spark_conf sets {key!r} ({value[key]!r}), which the job sets from the spec's {field}, so it "
                f"would be ignored; remove it from spark_conf and set {field}"
            )
    return value


def stringify_spark_conf(value: Any) -> Any:
    """Spark conf values as strings: YAML turns ``spark.sql.shuffle.partitions: 4`` into an int.

    Booleans become ``true``/``false``, the spelling Spark uses.
    """
    if not isinstance(value, Mapping):
        return value
    out: dict[Any, Any] = {}
    for key, item in value.items():
        if isinstance(item, bool):
            out[key] = "true" if item else "false"
        elif isinstance(item, int | float):
            out[key] = str(item)
        else:
            out[key] = item
    return out
