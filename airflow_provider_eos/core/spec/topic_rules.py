"""The rules for the pipeline's topics: each name, the set they form, and where reading starts.

A pipeline reads ``input_topics``, writes ``output_topic`` and, optionally, ``dlq_topic``: each is a
legal Kafka topic name, and no topic plays two parts (a pipeline reading its own output loops
forever; dead letters must not mix with output). ``starting_offsets`` names only input topics.
Each check returns the value or raises ``ValueError("<what is wrong>; <fix>")``, as
:mod:`.field_rules`' checks do; the later topic fields are checked against the earlier ones,
which pydantic validates first.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "check_dlq_topic",
    "check_input_topics",
    "check_output_topic",
    "check_starting_offsets",
    "check_topic",
]

# Kafka's own rule (org.apache.kafka.common.internals.Topic): legal chars and at most 249 long.
_TOPIC_RE = re.compile(r"[A-Za-z0-9._-]{1,249}")


def check_topic(value: str, field: str) -> str:
    """``value`` is a legal Kafka topic name; ``field`` names it in the message."""
    if not isinstance(value, str) or not _TOPIC_RE.fullmatch(value) or value in {".", ".."}:
        raise ValueError(
            f"{field} {value!r} is not a valid Kafka topic name; use 1-249 characters from "
            "[A-Za-z0-9._-], not '.' or '..'"
        )
    return value


def check_input_topics(value: list[str]) -> list[str]:
    """``input_topics``: at least one legal topic name, each listed once."""
    if not value:
        raise ValueError("input_topics is empty; list at least one topic to read")
    for topic in value:
        check_topic(topic, "input topic")
    duplicates = sorted({t for t in value if value.count(t) > 1})
    if duplicates:
        raise ValueError(f"input_topics lists {duplicates} more than once; list each topic once")
    return value


def check_output_topic(value: str, input_topics: list[str]) -> str:
    """``output_topic``: a legal topic name that the pipeline does not read.

    :param input_topics: the spec's input topics; empty when they failed validation.
    """
    check_topic(value, "output_topic")
    if value in input_topics:
        raise ValueError(
            f"output_topic {value!r} is also an input topic; a pipeline reading its own output "
            "loops forever, so choose a different output_topic"
        )
    return value


def check_dlq_topic(value: str | None, output_topic: str | None, input_topics: list[str]) -> str | None:
    """``dlq_topic`` (or ``None``): a legal topic name, neither the output topic nor an input topic.

    :param output_topic: the spec's output topic; ``None`` when it failed validation.
    :param input_topics: the spec's input topics; empty when they failed validation.
    """
    if value is None:
        return None
    check_topic(value, "dlq_topic")
    if value == output_topic:
        raise ValueError(
            f"dlq_topic {value!r} equals output_topic; dead letters must not mix with output, "
            "so choose a separate dlq_topic (or omit it)"
        )
    if value in input_topics:
        raise ValueError(
            f"dlq_topic {value!r} is also an input topic; choose a dlq_topic the pipeline does not read"
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
