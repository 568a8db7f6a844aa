"""EOS205-EOS212: the pipeline's topics.

They exist, are replicated, can take ``acks=all`` writes, are not compact-only, elect no unclean
leader, and keep input longer than the longest expected pause. The cluster's internal topics
(EOS201-EOS204) are :mod:`.internal_topics`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from airflow_provider_eos.core.acls import Acl, Operation, ResourceType, covers, principal_of, required_acls
from airflow_provider_eos.core.acls.denials import acl_missing, for_role
from airflow_provider_eos.core.preflight.facts import PreflightFacts, TopicFacts
from airflow_provider_eos.core.preflight.readings import (
    RECOMMENDED_REPLICATION,
    format_ms,
    recommended_replication,
)
from airflow_provider_eos.core.preflight.rule import (
    Outcome,
    Severity,
    failed,
    not_checked,
    passed,
    rule,
    unknown,
)
from airflow_provider_eos.core.spec import PipelineSpec

__all__: list[str] = []


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
        if topic is not None and topic.refused:
            unread.append(f"{name} (hidden: no DESCRIBE on it, EOS205/EOS206)")
        elif topic is not None and not topic.exists:
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


def _hidden(facts: PreflightFacts, topics: Sequence[tuple[str, str]]) -> Outcome:
    """Topics the broker would not describe to the principal: the ACL it lacks and the command granting the job's set.

    Kafka hides a topic from a principal without ``DESCRIBE`` on it (and answers so whether or not it
    exists), so "create the topic" would be the wrong fix.
    """
    spec = facts.spec
    principal = principal_of(spec.kafka)[0]
    refused = acl_missing("Metadata", ResourceType.TOPIC, [name for _, name in topics], principal=principal)
    # The fix names the job set's ACLs that give the DESCRIBE refused (READ or WRITE imply it), not its others there.
    needed = [Acl(principal=principal, resource_type=ResourceType.TOPIC, name=name, operation=Operation.DESCRIBE)
              for _, name in topics] if principal else []
    giving = [a for a in (required_acls(spec, principal, "job") if principal else ())
              if any(covers([a], n) for n in needed)]
    error = for_role(refused, "job", pipeline=spec.name, role_acls=giving)
    named = ", ".join(f"{role} topic {name!r}" for role, name in topics)
    return failed(
        f"{named} {'is' if len(topics) == 1 else 'are'} hidden: {error.message}; the broker hides a topic from a "
        "principal without DESCRIBE on it, so whether it exists cannot be told",
        fix=error.fix,
    )


def _topics_exist(facts: PreflightFacts, topics: Sequence[tuple[str, str]]) -> Outcome:
    if facts.topics is None:
        return unknown(facts, "topics", "topic metadata was")
    known = facts.topics
    hidden = [(role, name) for role, name in topics if name in known and known[name].refused]
    missing = [f"{role} topic {name!r}" for role, name in topics
               if name in known and not known[name].exists and not known[name].refused]
    unread = [name for _, name in topics if name not in facts.topics]
    if hidden:
        outcome = _hidden(facts, hidden)
        verb = "does" if len(missing) == 1 else "do"
        also = f"; {', '.join(missing)} {verb} not exist (create it once it can be seen)" if missing else ""
        return Outcome(outcome.status, outcome.message + also, outcome.fix)
    if missing:
        verb = "does" if len(missing) == 1 else "do"
        return failed(f"{', '.join(missing)} {verb} not exist")
    if unread:
        reasons = "; ".join(facts.unavailable[f"topic {n}"] for n in unread if f"topic {n}" in facts.unavailable)
        return not_checked(f"not checked: topics {', '.join(unread)} were not read" + (f" ({reasons})" if reasons
                                                                                       else ""))
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
    recommended = recommended_replication(facts)
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
