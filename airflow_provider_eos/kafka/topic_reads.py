"""Pre-flight's reads of the pipeline's topics that the all-topics metadata cannot answer: configs, unlisted topics.

Kafka leaves out of an all-topics Metadata answer every topic the principal may not ``DESCRIBE``,
so a topic missing there is not known to be missing. Named in a request of its own
(DescribeTopics, which never creates a topic) the broker says which: ``UNKNOWN_TOPIC_OR_PART``
when it does not exist, ``TOPIC_AUTHORIZATION_FAILED`` when the principal may not describe it
(Kafka answers so whether or not it exists: it does not tell an unauthorized principal).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import ConfigResource, ResourceType

from airflow_provider_eos.kafka.fact_gaps import reason

__all__ = ["TOPIC_KEYS", "Unlisted", "read_topic_configs", "why_unlisted"]

#: The topic settings the rules read.
TOPIC_KEYS = (
    "min.insync.replicas",
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "unclean.leader.election.enable",
)


class Unlisted(StrEnum):
    """Why a topic is not in the all-topics metadata, as the broker answered a request naming it."""

    MISSING = "missing"  # UNKNOWN_TOPIC_OR_PART: the topic does not exist
    REFUSED = "refused"  # TOPIC_AUTHORIZATION_FAILED: hidden from the principal, which lacks DESCRIBE on it


def why_unlisted(admin: Any, names: Iterable[str], timeout_s: float) -> dict[str, Unlisted | str]:
    """For each topic the all-topics metadata left out: :class:`Unlisted`, or why the broker's answer tells neither.

    :param admin: a confluent-kafka ``AdminClient``.
    :return: per name, ``MISSING``, ``REFUSED``, or the error of a request that could not tell (a
        timeout, a topic being created) as text.
    """
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    answers: dict[str, Unlisted | str] = {}
    try:
        futures = admin.describe_topics(TopicCollection(wanted), request_timeout=timeout_s)
    except KafkaException as exc:
        return dict.fromkeys(wanted, f"DescribeTopics: {reason(exc)}")
    for name, future in futures.items():
        try:
            future.result(timeout_s + 5)
        except (KafkaException, TimeoutError) as exc:
            error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
            code = error.code() if isinstance(error, KafkaError) else None
            if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                answers[name] = Unlisted.REFUSED
            elif code == KafkaError.UNKNOWN_TOPIC_OR_PART:
                answers[name] = Unlisted.MISSING
            else:
                answers[name] = f"DescribeTopics({name}): {reason(exc)}"
            continue
        # Described on its own, yet not in the all-topics answer: created meanwhile; read it next time.
        answers[name] = f"{name} was not in the topic metadata but DescribeTopics found it (created just now?)"
    return answers


def read_topic_configs(admin: Any, names: list[str], timeout_s: float) -> tuple[dict[str, dict[str, str | None]], str]:
    """:data:`TOPIC_KEYS` of each topic by DescribeConfigs, and why some (or all) could not be read ("" if none).

    :param admin: a confluent-kafka ``AdminClient``.
    """
    if not names:
        return {}, ""
    found: dict[str, dict[str, str | None]] = {}
    failures: list[str] = []
    try:
        futures = admin.describe_configs(
            [ConfigResource(ResourceType.TOPIC, name) for name in names], request_timeout=timeout_s
        )
    except KafkaException as exc:
        return {}, reason(exc)
    for resource, future in futures.items():
        try:
            entries = future.result(timeout_s + 5)
        except (KafkaException, TimeoutError) as exc:
            failures.append(f"{resource.name}: {reason(exc)}")
            continue
        found[resource.name] = {key: entries[key].value for key in TOPIC_KEYS if key in entries}
    return found, "; ".join(failures)
