"""The rules for single spec fields that need more than a type: names, numbers, trigger, checkpoint, transform.

Each check takes the field's value and returns it (possibly normalized) or raises
``ValueError("<what is wrong>; <fix>")``; :class:`~airflow_provider_eos.core.spec.PipelineSpec`'s
validators call them and :mod:`.validation_errors` turns the messages into one
:class:`~airflow_provider_eos.core.errors.SpecError`. The rules follow what Kafka and Spark
accept, so a spec that validates here does not fail later inside Spark or Kafka. The topics'
rules are :mod:`.topic_rules`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from airflow_provider_eos.core import transactional_ids
from airflow_provider_eos.core.errors import EosError

__all__ = [
    "JAVA_INT_MAX",
    "JAVA_LONG_MAX",
    "MAX_LEASE_TTL_S",
    "MIN_LEASE_TTL_S",
    "MIN_TRANSACTION_TIMEOUT_MS",
    "TRIGGER_AVAILABLE_NOW",
    "check_checkpoint_location",
    "check_driver_lease_ttl",
    "check_group_id",
    "check_name",
    "check_positive_or_none",
    "check_spark_conf",
    "check_transaction_timeout",
    "check_transactional_id_prefix",
    "check_transform",
    "check_trigger",
    "parse_interval_ms",
    "reject_bool",
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
#: The shortest driver lease: renewed every second, written at most once a second to the checkpoint.
MIN_LEASE_TTL_S = 3
#: The longest driver lease: recovery after a crash waits ttl + 25 s for a killed driver's lease to
#: expire before it may act (:func:`~airflow_provider_eos.core.driver_lease.lease_expiry_wait_s`), so
#: the ttl is how long a crashed pipeline stays down; an hour is far beyond what a slow checkpoint
#: store needs (renewals every ttl / 3), and a year would be no recovery at all.
MAX_LEASE_TTL_S = 3600

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
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


def check_trigger(value: str) -> str:
    """The trigger is ``available_now`` or an interval Spark parses."""
    if value != TRIGGER_AVAILABLE_NOW and parse_interval_ms(value) is None:
        raise ValueError(
            f"trigger {value!r} is neither 'available_now' nor an interval; use 'available_now' "
            "or '<number> <unit>' with unit milliseconds, seconds, minutes, hours or days, "
            "e.g. '10 seconds'"
        )
    return value


def check_group_id(value: str) -> str:
    """The sink group is a name without surrounding spaces, used only by this pipeline's sink."""
    if not value.strip() or value != value.strip():
        raise ValueError(
            f"group_id {value!r} is empty or has surrounding spaces; set a group name used only "
            "by this pipeline's sink"
        )
    return value


def check_transactional_id_prefix(value: str) -> str:
    """A prefix the transactional ids' scheme accepts.

    :func:`~airflow_provider_eos.core.transactional_ids.validate_prefix` owns the rule; its error's
    message and fix become the field's message.
    """
    try:
        return transactional_ids.validate_prefix(value)
    except EosError as err:
        raise ValueError(f"{err.message}; {err.fix}") from err


def reject_bool(value: Any, field_name: str) -> Any:
    """An integer field given ``true`` or ``false`` is refused, before pydantic would read it as a number."""
    # pydantic's lax mode turns `true` into 1, which would hide a YAML slip in a timeout.
    if isinstance(value, bool):
        raise ValueError(f"{field_name} is {value!r}; use an integer")
    return value


def check_positive_or_none(value: int | None, field_name: str) -> int | None:
    """``max_offsets_per_trigger`` or ``batch_budget_ms``: positive or ``None`` (the former also a Java long)."""
    if value is not None and value <= 0:
        raise ValueError(f"{field_name} is {value}; use a positive integer or null")
    if field_name == "max_offsets_per_trigger" and value is not None and value > JAVA_LONG_MAX:
        # Spark parses it as a long when the query starts: a larger value fails there, not here.
        raise ValueError(
            f"max_offsets_per_trigger is {value}, above Spark's limit {JAVA_LONG_MAX} "
            "(a Java long); use a smaller number, or null for no limit"
        )
    return value


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


def check_driver_lease_ttl(value: int, field_name: str) -> int:
    """``driver_lease_ttl_s``: from :data:`MIN_LEASE_TTL_S` to :data:`MAX_LEASE_TTL_S` seconds."""
    if value < MIN_LEASE_TTL_S:
        raise ValueError(f"{field_name} is {value}; use at least {MIN_LEASE_TTL_S} seconds (the driver renews "
                         "its lease every third of it)")
    if value > MAX_LEASE_TTL_S:
        raise ValueError(
            f"{field_name} is {value}; use at most {MAX_LEASE_TTL_S} seconds (an hour): recovery after a "
            "crash waits the ttl plus 25 s for the killed driver's lease to expire before it may act, so the ttl "
            "is how long a crashed pipeline stays down; 30 (the default) to a few minutes rides out a slow "
            "checkpoint store"
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
