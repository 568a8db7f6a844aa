"""EOS2xx: the Kafka cluster and the pipeline's topics.

The internal topics take writes (once they exist, by their in-sync replicas; before, by the
brokers' replication factor against the live brokers) and the transaction log's min ISR fits
the live brokers; the pipeline's topics exist, are replicated, can take ``acks=all`` writes, are
not compact-only, elect no unclean leader, and keep input longer than the longest expected pause.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from airflow_provider_eos.core.preflight.facts import PreflightFacts, TopicFacts
from airflow_provider_eos.core.preflight.readings import broker_setting, format_ms
from airflow_provider_eos.core.preflight.rule import (
    Outcome,
    Severity,
    Status,
    failed,
    not_checked,
    passed,
    rule,
    unknown,
)
from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["RECOMMENDED_REPLICATION"]

#: Replication Kafka recommends for durability; fewer live brokers make a lower factor the best
#: possible, so rules compare against ``min(RECOMMENDED_REPLICATION, live brokers)``.
RECOMMENDED_REPLICATION = 3


def _pipeline_topics(spec: PipelineSpec) -> list[tuple[str, str]]:
    """(role, topic) for every topic the pipeline reads or writes."""
    topics = [("input", t) for t in spec.input_topics] + [("output", spec.output_topic)]
    if spec.dlq_topic:
        topics.append(("dead-letter", spec.dlq_topic))
    return topics


def _sink_topics(spec: PipelineSpec) -> list[tuple[str, str]]:
    return [(role, t) for role, t in _pipeline_topics(spec) if role != "input"]


def _topic_rule(
    facts: PreflightFacts,
    topics: Sequence[tuple[str, str]],
    attribute: str,
    what: str,
    bad: Callable[[TopicFacts, Any], str | None],
) -> Outcome:
    """Check one topic setting on ``topics``: ``bad`` returns why a topic fails, or ``None``.

    Topics that do not exist (EOS205/EOS206 report them) or whose setting was not read are
    named in the message; the rule is "not checked" only when no topic could be checked.
    """
    if facts.topics is None:
        return unknown(facts, "topics", "topic metadata and configs were")
    checked: list[tuple[str, TopicFacts]] = []
    missing: list[str] = []
    unread: list[str] = []
    for role, name in topics:
        topic = facts.topics.get(name)
        if topic is not None and not topic.exists:
            missing.append(name)
        elif topic is None or getattr(topic, attribute) is None:
            unread.append(name)
        else:
            checked.append((role, topic))
    notes = []
    if missing:
        notes.append(f"{', '.join(missing)} {'does' if len(missing) == 1 else 'do'} not exist")
    if unread:
        reason = facts.unavailable.get("topic_configs") or facts.unavailable.get("topics")
        notes.append(f"{what} of {', '.join(unread)} not read" + (f" ({reason})" if reason else ""))
    if not checked:
        return not_checked("not checked: " + "; ".join(notes))
    note = "".join(f"; {n}" for n in notes)
    problems = [f"{role} topic {t.name!r} {problem}" for role, t in checked if (problem := bad(t, facts))]
    if problems:
        return failed("; ".join(problems) + note)
    values = ", ".join(f"{t.name}={_value(getattr(t, attribute))}" for _, t in checked)
    return passed(f"{what}: {values}{note}")


def _value(value: object) -> str:
    # Kafka spells booleans in lower case; showing Python's True would not match any config.
    return str(value).lower() if isinstance(value, bool) else str(value)


def _recommended_replication(facts: PreflightFacts) -> int | None:
    if facts.live_brokers is None:
        return None
    return min(RECOMMENDED_REPLICATION, max(facts.live_brokers, 1))


def _setting_vs_live(facts: PreflightFacts, key: str, effect: str) -> Outcome:
    """The highest ``key`` over the brokers against the live broker count: ``effect`` when above."""
    found = broker_setting(facts, key, max)
    if found is None:
        return unknown(facts, "broker_configs", "the brokers' configs were")
    if facts.live_brokers is None:
        return unknown(facts, "live_brokers", "the live broker count was")
    value, who = found
    if value > facts.live_brokers:
        return failed(
            f"{key} {value} of {who} > {facts.live_brokers} live broker(s): {effect}",
            fix=f"start at least {value} brokers, or lower {key} to {facts.live_brokers} or less on every broker",
        )
    return passed(f"{key} {value} of {who} <= {facts.live_brokers} live broker(s)")


def _listed(partitions: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(partitions[:limit])
    return shown if len(partitions) <= limit else f"{shown} and {len(partitions) - limit} more"


def _internal_topic_rule(
    facts: PreflightFacts, name: str, factor_key: str, uncreatable: str, unwritable: str
) -> Outcome:
    """An internal topic takes writes: once it exists, by its in-sync replicas; before, by the brokers' factor.

    The brokers' ``factor_key`` is used only when Kafka creates the topic; an existing topic is
    judged by what it has: a partition with fewer in-sync replicas than its
    ``min.insync.replicas`` refuses writes (the rule's severity), a partition with fewer replicas
    than the factor is only less durable (a warning).
    """
    if facts.internal_topics is None:
        return unknown(facts, "internal_topics", f"the metadata of {name} was")
    topic = facts.internal_topics.get(name)
    if topic is None:
        reason = facts.unavailable.get(name) or facts.unavailable.get("internal_topics")
        return not_checked(f"not checked: whether {name} exists was not read" + (f" ({reason})" if reason else ""))
    if not topic.exists:
        outcome = _setting_vs_live(facts, factor_key, f"{name} cannot be created, so {uncreatable}")
        return Outcome(outcome.status, outcome.message if outcome.status is Status.NOT_CHECKED
                       else f"{name} does not exist yet; {outcome.message}", outcome.fix)
    if topic.min_insync_replicas is None:
        reason = facts.unavailable.get(name)
        return not_checked(
            f"not checked: {name} exists, but its min.insync.replicas was not read" + (f" ({reason})" if reason else "")
        )
    min_isr = topic.min_insync_replicas
    short = [
        f"{name}-{p} ({topic.in_sync[p]} of {topic.replicas.get(p, 0)} replicas in sync)"
        for p in sorted(topic.in_sync)
        if topic.in_sync[p] < min_isr
    ]
    if short:
        return failed(
            f"{len(short)} partition(s) of {name} have fewer in-sync replicas than its min.insync.replicas {min_isr}: "
            f"{_listed(short)}; {unwritable}",
            fix=f"bring back the brokers holding those partitions' replicas and wait until they are in sync "
            f"(kafka-topics.sh --describe --topic {name} --under-min-isr-partitions lists what is left)",
        )
    partitions = len(topic.in_sync)
    lowest = min(topic.in_sync.values(), default=0)
    behind = sum(1 for p, isr in topic.in_sync.items() if isr < topic.replicas.get(p, 0))
    state = f"{name} exists: {partitions} partitions, each with at least {lowest} in-sync replica(s) >= " \
            f"min.insync.replicas {min_isr}"
    if behind:
        state += f" ({behind} with a replica out of sync: a broker down or catching up)"
    factor = broker_setting(facts, factor_key, max)
    if factor is None:
        return passed(f"{state}; {factor_key} not compared (the brokers' configs were not read)")
    value, who = factor
    thin = [f"{name}-{p} ({r})" for p, r in sorted(topic.replicas.items()) if r < value]
    if thin:
        return failed(
            f"{state}, but {len(thin)} partition(s) have fewer replicas than {factor_key} {value} of {who}: "
            f"{_listed(thin)}; losing their brokers loses what those partitions hold",
            fix=f"reassign the listed partitions of {name} to {value} replicas (kafka-reassign-partitions.sh); "
            f"{factor_key} applies only when the topic is created",
            severity=Severity.WARNING,
        )
    return passed(f"{state}; {factor_key} {value} of {who} applies only at its creation")


@rule(
    "EOS201",
    Severity.ERROR,
    "__transaction_state takes writes (or can be created)",
    "bring back the brokers holding the replicas of the listed __transaction_state partitions; before the topic "
    "exists, start more brokers or lower transaction.state.log.replication.factor",
)
def _txn_log_replication(facts: PreflightFacts) -> Outcome:
    return _internal_topic_rule(
        facts,
        "__transaction_state",
        "transaction.state.log.replication.factor",
        "no transactional producer can initialize",
        "transactions these partitions coordinate cannot initialize or commit (NOT_ENOUGH_REPLICAS)",
    )


@rule(
    "EOS202",
    Severity.ERROR,
    "transaction state log min ISR <= live brokers and replication",
    "lower transaction.state.log.min.isr to at most the live brokers and the state log's replication factor",
)
def _txn_log_min_isr(facts: PreflightFacts) -> Outcome:
    outcome = _setting_vs_live(
        facts,
        "transaction.state.log.min.isr",
        "writes to __transaction_state fail (NOT_ENOUGH_REPLICAS), so no transaction can commit",
    )
    if outcome.status is not Status.PASS:
        return outcome
    min_isr = broker_setting(facts, "transaction.state.log.min.isr", max)
    replication = broker_setting(facts, "transaction.state.log.replication.factor", min)
    assert min_isr is not None and replication is not None
    if min_isr[0] > replication[0]:
        return failed(
            f"transaction.state.log.min.isr {min_isr[0]} of {min_isr[1]} > transaction.state.log.replication.factor "
            f"{replication[0]} of {replication[1]}: writes to __transaction_state can never reach enough replicas"
        )
    return passed(f"{outcome.message}; replication factor {replication[0]}")


@rule(
    "EOS203",
    Severity.WARNING,
    "transaction state log is replicated",
    f"set transaction.state.log.replication.factor to {RECOMMENDED_REPLICATION} (or the broker count if "
    "smaller) before __transaction_state is first created; once it exists, reassign its partitions",
)
def _txn_log_durability(facts: PreflightFacts) -> Outcome:
    found = broker_setting(facts, "transaction.state.log.replication.factor", min)
    if found is None:
        return unknown(facts, "broker_configs", "the brokers' configs were")
    recommended = _recommended_replication(facts)
    if recommended is None:
        return unknown(facts, "live_brokers", "the live broker count was")
    value, who = found
    if value < recommended:
        return failed(
            f"transaction.state.log.replication.factor {value} of {who} with {facts.live_brokers} live brokers: "
            "losing one broker loses the state of the transactions it coordinates"
        )
    single = " (a single broker, as in the devstack: nothing to replicate to)" if facts.live_brokers == 1 else ""
    return passed(f"transaction.state.log.replication.factor {value} of {who}{single}")


@rule(
    "EOS204",
    Severity.ERROR,
    "__consumer_offsets takes writes (or can be created)",
    "bring back the brokers holding the replicas of the listed __consumer_offsets partitions; before the topic "
    "exists, start more brokers or lower offsets.topic.replication.factor",
)
def _offsets_replication(facts: PreflightFacts) -> Outcome:
    return _internal_topic_rule(
        facts,
        "__consumer_offsets",
        "offsets.topic.replication.factor",
        "the sink cannot commit offsets and batch markers",
        "the sink cannot commit offsets and batch markers to groups these partitions hold (NOT_ENOUGH_REPLICAS)",
    )


def _topics_exist(facts: PreflightFacts, topics: Sequence[tuple[str, str]]) -> Outcome:
    if facts.topics is None:
        return unknown(facts, "topics", "topic metadata was")
    known = facts.topics
    missing = [f"{role} topic {name!r}" for role, name in topics if name in known and not known[name].exists]
    unread = [name for _, name in topics if name not in facts.topics]
    if missing:
        verb = "does" if len(missing) == 1 else "do"
        return failed(f"{', '.join(missing)} {verb} not exist")
    if unread:
        return not_checked(f"not checked: topics {', '.join(unread)} were not read")
    described = ", ".join(f"{name} ({facts.topics[name].partitions} partitions)" for _, name in topics)
    return passed(f"exist: {described}")


@rule(
    "EOS205",
    Severity.ERROR,
    "input topics exist",
    "create the missing input topics, or correct input_topics in the spec",
)
def _inputs_exist(facts: PreflightFacts) -> Outcome:
    return _topics_exist(facts, [("input", t) for t in facts.spec.input_topics])


@rule(
    "EOS206",
    Severity.ERROR,
    "output and dead-letter topics exist",
    "create the output (and dead-letter) topic with the intended partitions, replication and min.insync.replicas; "
    "relying on auto-creation gives broker defaults",
)
def _sink_topics_exist(facts: PreflightFacts) -> Outcome:
    return _topics_exist(facts, _sink_topics(facts.spec))


@rule(
    "EOS207",
    Severity.ERROR,
    "min.insync.replicas <= replication factor",
    "lower the topic's min.insync.replicas to its replication factor or below (kafka-configs --alter), or "
    "add replicas (kafka-reassign-partitions)",
)
def _min_isr_vs_rf(facts: PreflightFacts) -> Outcome:
    # acks=all writes need min.insync.replicas in-sync copies; more than exist can never be met.
    def bad(topic: TopicFacts, _: PreflightFacts) -> str | None:
        if topic.replication_factor is not None and topic.min_insync_replicas > topic.replication_factor:
            return (
                f"has min.insync.replicas {topic.min_insync_replicas} > replication factor "
                f"{topic.replication_factor}: every acks=all write fails with NOT_ENOUGH_REPLICAS"
            )
        return None

    return _topic_rule(facts, _pipeline_topics(facts.spec), "min_insync_replicas", "min.insync.replicas", bad)


@rule(
    "EOS208",
    Severity.ERROR,
    "sink topics' min.insync.replicas <= live brokers",
    "bring the missing brokers back, or lower min.insync.replicas of the output and dead-letter topics",
)
def _min_isr_vs_live(facts: PreflightFacts) -> Outcome:
    if facts.live_brokers is None:
        return unknown(facts, "live_brokers", "the live broker count was")

    def bad(topic: TopicFacts, facts: PreflightFacts) -> str | None:
        assert facts.live_brokers is not None
        if topic.min_insync_replicas > facts.live_brokers:
            return (
                f"has min.insync.replicas {topic.min_insync_replicas} > {facts.live_brokers} live broker(s): "
                "the sink's acks=all writes fail until more brokers are up"
            )
        return None

    return _topic_rule(facts, _sink_topics(facts.spec), "min_insync_replicas", "min.insync.replicas", bad)


@rule(
    "EOS209",
    Severity.WARNING,
    "sink topics are replicated",
    f"give the output and dead-letter topics replication factor {RECOMMENDED_REPLICATION} (or the broker count if "
    "smaller) and min.insync.replicas 2",
)
def _sink_durability(facts: PreflightFacts) -> Outcome:
    recommended = _recommended_replication(facts)
    if recommended is None:
        return unknown(facts, "live_brokers", "the live broker count was")

    def bad(topic: TopicFacts, facts: PreflightFacts) -> str | None:
        if topic.replication_factor < recommended:
            return (
                f"has replication factor {topic.replication_factor} with {facts.live_brokers} live brokers: losing "
                "one broker loses committed output"
            )
        if (
            topic.replication_factor >= RECOMMENDED_REPLICATION
            and topic.min_insync_replicas is not None
            and topic.min_insync_replicas < 2
        ):
            return (
                f"has replication factor {topic.replication_factor} but min.insync.replicas "
                f"{topic.min_insync_replicas}: a commit acknowledged by one replica is lost with that broker"
            )
        return None

    return _topic_rule(facts, _sink_topics(facts.spec), "replication_factor", "replication factor", bad)


@rule(
    "EOS210",
    Severity.WARNING,
    "sink topics are not compact-only",
    "set cleanup.policy=delete (or delete,compact) on the output and dead-letter topics",
)
def _sink_cleanup_policy(facts: PreflightFacts) -> Outcome:
    # Compaction drops all but the newest record per key, so the output no longer holds one
    # record per input record and counts (in = out + DLQ, duplicates, lost) cannot be audited.
    def bad(topic: TopicFacts, _: PreflightFacts) -> str | None:
        policies = {p.strip().lower() for p in str(topic.cleanup_policy).split(",") if p.strip()}
        if policies == {"compact"}:
            return "has cleanup.policy=compact: compaction keeps only the newest record per key"
        return None

    return _topic_rule(facts, _sink_topics(facts.spec), "cleanup_policy", "cleanup.policy", bad)


@rule(
    "EOS211",
    Severity.ERROR,
    "unclean leader election is off",
    "set unclean.leader.election.enable=false on the listed topics (and on the brokers)",
)
def _unclean_election(facts: PreflightFacts) -> Outcome:
    # An out-of-sync replica taking over truncates acknowledged records: committed output
    # vanishes, or input is lost under the checkpoint's offsets.
    def bad(topic: TopicFacts, _: PreflightFacts) -> str | None:
        if topic.unclean_leader_election:
            return "has unclean.leader.election.enable=true: a failover can drop committed records"
        return None

    return _topic_rule(
        facts, _pipeline_topics(facts.spec), "unclean_leader_election", "unclean.leader.election.enable", bad
    )


@rule(
    "EOS212",
    Severity.WARNING,
    "input retention > longest expected pause",
    "raise retention.ms of the input topics above the longest pause you expect, and set their retention.bytes "
    "to -1 (or high enough to hold the input of the longest pause)",
)
def _input_retention(facts: PreflightFacts) -> Outcome:
    # Records deleted while the pipeline is stopped are never read; with failOnDataLoss the
    # query then stops instead of silently skipping them. retention.bytes deletes by size,
    # whatever retention.ms says, and a size cannot be compared with a pause: any limit warns.
    pause = facts.longest_expected_pause_ms

    def bad(topic: TopicFacts, _: PreflightFacts) -> str | None:
        problems = []
        if 0 <= topic.retention_ms <= pause:
            problems.append(
                f"has retention.ms {format_ms(topic.retention_ms)}, not above the longest expected pause "
                f"{format_ms(pause)}: records may be deleted before the pipeline reads them"
            )
        if topic.retention_bytes is not None and topic.retention_bytes >= 0:
            problems.append(
                f"has retention.bytes {topic.retention_bytes}: each partition deletes its oldest records beyond that "
                "size, read or not, and how much input arrives during a pause is not known here"
            )
        return "; ".join(problems) or None

    return _topic_rule(facts, [("input", t) for t in facts.spec.input_topics], "retention_ms", "retention.ms", bad)
