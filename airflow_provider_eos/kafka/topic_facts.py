"""Pre-flight's facts of topics: the pipeline's topics and the internal topics, read live.

Partitions and replicas from the all-topics metadata (the internal topics' in-sync replicas too),
settings from DescribeConfigs; a pipeline topic the metadata leaves out is asked about by name
(:func:`~airflow_provider_eos.kafka.topic_reads.why_unlisted`: missing, or hidden from a principal
without DESCRIBE on it). A read that fails leaves its facts unknown with the reason in
:class:`~airflow_provider_eos.kafka.fact_gaps.FactGaps`, as every pre-flight read does.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import ConfigResource, ResourceType

from airflow_provider_eos.core.acls import INTERNAL_TOPICS
from airflow_provider_eos.core.preflight import InternalTopicFacts, TopicFacts
from airflow_provider_eos.kafka.fact_gaps import FactGaps
from airflow_provider_eos.kafka.topic_reads import Unlisted, read_topic_configs, why_unlisted

__all__ = ["TopicReads"]

class TopicReads:
    """One pre-flight's reads of topics through ``admin``; :meth:`topics` first (it reads the metadata).

    :param gaps: where a read that fails records why.
    """

    def __init__(self, admin: Any, timeout_s: float, gaps: FactGaps) -> None:
        self.admin = admin
        self.timeout_s = timeout_s
        self.gaps = gaps
        self.metadata: Any = None  # the all-topics metadata, once topics() read it

    def topics(self, names: list[str]) -> tuple[dict[str, TopicFacts] | None, dict[str, list[int]]]:
        """Facts of the topics ``names`` (the pipeline's), and the partitions of those that exist."""
        try:
            metadata = self.admin.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            self.gaps.missing("topics", exc)
            return None, {}
        self.metadata = metadata
        partitions: dict[str, list[int]] = {}
        shapes: dict[str, tuple[int, int]] = {}
        for name in names:
            topic = metadata.topics.get(name)
            if topic is None or topic.error is not None or not topic.partitions:
                continue
            partitions[name] = sorted(topic.partitions)
            shapes[name] = (len(topic.partitions), min(len(p.replicas) for p in topic.partitions.values()))
        configs, unread = read_topic_configs(self.admin, list(shapes), self.timeout_s)
        if unread:
            self.gaps.unavailable["topic_configs"] = unread
        # Left out of the all-topics answer: missing, or hidden from a principal without DESCRIBE on it.
        unlisted = why_unlisted(self.admin, [n for n in names if n not in shapes], self.timeout_s)
        facts: dict[str, TopicFacts] = {}
        for name in names:
            if name not in shapes:
                answer = unlisted[name]
                if isinstance(answer, Unlisted):
                    facts[name] = TopicFacts(name=name, exists=False, refused=answer is Unlisted.REFUSED)
                else:  # neither told: the topic stays unread (its rules say "not read"), the reason recorded
                    self.gaps.unavailable[f"topic {name}"] = answer
                continue
            config = configs.get(name, {})
            count, replication = shapes[name]
            facts[name] = TopicFacts(
                name=name,
                exists=True,
                partitions=count,
                replication_factor=replication,
                min_insync_replicas=_int(config.get("min.insync.replicas")),
                cleanup_policy=config.get("cleanup.policy"),
                retention_ms=_int(config.get("retention.ms")),
                unclean_leader_election=_bool(config.get("unclean.leader.election.enable")),
                retention_bytes=_int(config.get("retention.bytes")),
            )
        return facts, partitions

    def internal_topics(self) -> dict[str, InternalTopicFacts] | None:
        """``__transaction_state`` and ``__consumer_offsets``: replicas and ISR per partition, min ISR.

        From the all-topics metadata :meth:`topics` read (a request naming an internal topic would
        make the broker create it) and DescribeConfigs, which also tells a topic that does not
        exist (UNKNOWN_TOPIC_OR_PART) from one the principal may not describe (left out of the
        mapping, the reason in ``unavailable`` under its name).
        """
        metadata = self.metadata
        if metadata is None:
            unavailable = self.gaps.unavailable
            unavailable["internal_topics"] = unavailable.get("topics", "the topic metadata was not read")
            return None
        try:
            futures = self.admin.describe_configs(
                [ConfigResource(ResourceType.TOPIC, name) for name in INTERNAL_TOPICS], request_timeout=self.timeout_s
            )
        except KafkaException as exc:
            futures = {}
            for name in INTERNAL_TOPICS:
                self.gaps.missing(name, exc)
        facts: dict[str, InternalTopicFacts] = {}
        for resource, future in futures.items():
            name = resource.name
            listed = metadata.topics.get(name)
            min_isr: int | None = None
            try:
                entry = future.result(self.timeout_s + 5).get("min.insync.replicas")
                min_isr = _int(entry.value) if entry is not None else None
            except (KafkaException, TimeoutError) as exc:
                error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
                unknown = isinstance(error, KafkaError) and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
                if unknown and listed is None:
                    facts[name] = InternalTopicFacts(name=name, exists=False)
                    continue
                self.gaps.missing(name, exc)
            if listed is None or listed.error is not None or not listed.partitions:
                # It exists (or may) but the metadata does not show it: not allowed to describe it.
                self.gaps.unavailable.setdefault(name, f"{name} is not in the cluster metadata this principal may read")
                continue
            facts[name] = InternalTopicFacts(
                name=name,
                exists=True,
                replicas={p: len(part.replicas) for p, part in listed.partitions.items()},
                in_sync={p: len(part.isrs) for p, part in listed.partitions.items()},
                min_insync_replicas=min_isr,
            )
        return facts


def _int(value: str | None) -> int | None:
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def _bool(value: str | None) -> bool | None:
    return None if value is None else value.strip().lower() == "true"
