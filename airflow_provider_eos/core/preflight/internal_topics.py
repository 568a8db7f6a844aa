"""EOS201-EOS204: the cluster's internal topics, ``__transaction_state`` and ``__consumer_offsets``.

They take writes: once they exist, by their in-sync replicas against their ``min.insync.replicas``
(the brokers' replication factor applies only when Kafka creates them, so a broker down in a rolling
restart blocks nothing that still has enough replicas in sync); before, by the brokers' replication
factor against the live brokers. The transaction log's own min ISR fits its partitions' replicas once it
exists (before, the brokers' ``transaction.state.log.min.isr`` fits the live brokers and their replication
factor), and the log is replicated: each partition of the existing topic, or the brokers' replication factor
before it exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from airflow_provider_eos.core.preflight.facts import InternalTopicFacts, PreflightFacts
from airflow_provider_eos.core.preflight.readings import (
    RECOMMENDED_REPLICATION,
    broker_setting,
    recommended_replication,
)
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

__all__: list[str] = []


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
    short = [p for p in sorted(topic.in_sync) if topic.in_sync[p] < min_isr]
    if short:
        return _below_min_isr(topic, short, min_isr, unwritable)
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


def _below_min_isr(topic: InternalTopicFacts, short: Sequence[int], min_isr: int, unwritable: str) -> Outcome:
    """``topic``'s partitions ``short`` have fewer in-sync replicas than its ``min_isr``: their brokers are down,
    or they have fewer replicas than that at all, which no broker coming back mends (the fix EOS202 gives)."""
    name = topic.name
    in_sync = [f"{name}-{p} ({topic.in_sync[p]} of {topic.replicas.get(p, 0)} replicas in sync)" for p in short]
    message = (f"{len(short)} partition(s) of {name} have fewer in-sync replicas than its min.insync.replicas "
               f"{min_isr}: {_listed(in_sync)}; {unwritable}")
    too_few = [p for p in short if topic.replicas.get(p, 0) < min_isr]
    if not too_few:
        return failed(message, fix=f"bring back the brokers holding those partitions' replicas and wait until they "
                      f"are in sync (kafka-topics.sh --describe --topic {name} --under-min-isr-partitions lists what "
                      "is left)")
    fewest = min(topic.replicas.get(p, 0) for p in too_few)
    if len(too_few) == len(short):
        cause = f"each has fewer replicas than min.insync.replicas {min_isr}"
        fix = _lower_min_isr_or_reassign(name, fewest, min_isr, "those partitions")
    else:
        replicas = [f"{name}-{p} ({topic.replicas.get(p, 0)})" for p in too_few]
        cause = f"{len(too_few)} of them have fewer replicas than min.insync.replicas {min_isr}: {_listed(replicas)}"
        fix = (_lower_min_isr_or_reassign(name, fewest, min_isr, "the partitions with too few replicas")
               + "; for the others, bring back the brokers holding their replicas and wait until they are in sync "
               f"(kafka-topics.sh --describe --topic {name} --under-min-isr-partitions lists what is left)")
    return failed(f"{message}; {cause}, so no broker coming back makes them writable", fix=fix)


def _lower_min_isr_or_reassign(name: str, fewest: int, min_isr: int, which: str) -> str:
    """The fix of ``name``'s partitions ``which`` having fewer replicas (``fewest`` at least) than its
    ``min_isr``: lower the topic's ``min.insync.replicas``, or give them more replicas (EOS201, EOS202, EOS204)."""
    lowest = max(fewest, 1)
    return (f"lower {name}'s min.insync.replicas to {lowest} or less (kafka-configs.sh --bootstrap-server HOST:PORT "
            f"--alter --entity-type topics --entity-name {name} --add-config min.insync.replicas={lowest}), or "
            f"reassign {which} to {min_isr} replicas or more (kafka-reassign-partitions.sh)")


#: The catalog's words on a partition that has fewer replicas than its topic's min.insync.replicas (EOS201, EOS204).
_TOO_FEW_REPLICAS = ("; a partition with fewer replicas than the topic's min.insync.replicas takes no write whatever "
                     "comes back: lower the topic's min.insync.replicas (kafka-configs.sh) or raise the partition's "
                     "replication factor (kafka-reassign-partitions.sh)")


@rule(
    "EOS201",
    Severity.ERROR,
    "__transaction_state takes writes (or can be created)",
    "bring back the brokers holding the replicas of the listed __transaction_state partitions; before the topic "
    "exists, start more brokers or lower transaction.state.log.replication.factor" + _TOO_FEW_REPLICAS,
)
def _txn_log_replication(facts: PreflightFacts) -> Outcome:
    return _internal_topic_rule(
        facts,
        "__transaction_state",
        "transaction.state.log.replication.factor",
        "no transactional producer can initialize",
        "transactions these partitions coordinate cannot initialize or commit (NOT_ENOUGH_REPLICAS)",
    )


def _existing_log_min_isr(facts: PreflightFacts, topic: InternalTopicFacts) -> Outcome:
    """The existing ``__transaction_state``'s own ``min.insync.replicas`` against its partitions' replicas.

    Kafka gave the topic ``transaction.state.log.min.isr`` as its ``min.insync.replicas`` when it created
    it; an administrator may have changed it since, and the brokers' setting is never read again. A
    partition with fewer replicas than that can never take a write; fewer in sync now is EOS201's.
    """
    name = topic.name
    if topic.min_insync_replicas is None:
        reason = facts.unavailable.get(name)
        return not_checked(
            f"not checked: {name} exists, but its min.insync.replicas was not read" + (f" ({reason})" if reason else "")
        )
    min_isr = topic.min_insync_replicas
    fewest, short, applies = _partitions_below(facts, topic, min_isr, "transaction.state.log.min.isr", max)
    if short:
        return failed(
            f"{name}'s min.insync.replicas {min_isr} > the replicas of {len(short)} of its partitions: "
            f"{_listed(short)}; writes to them can never reach enough in-sync replicas (NOT_ENOUGH_REPLICAS), so "
            f"the transactions they coordinate can neither initialize nor commit{applies}",
            fix=_lower_min_isr_or_reassign(name, fewest, min_isr, "the listed partitions")
            + "; the brokers' transaction.state.log.min.isr does not change an existing topic",
        )
    return passed(
        f"{name}'s min.insync.replicas {min_isr} <= the replicas of each of its partitions (at least {fewest}); "
        f"whether enough are in sync now is EOS201's{applies}"
    )


@rule(
    "EOS202",
    Severity.ERROR,
    "transaction state log min ISR fits its replicas (before it exists: the live brokers and replication)",
    "once __transaction_state exists, lower its min.insync.replicas to at most its partitions' replicas "
    "(kafka-configs.sh); before, lower transaction.state.log.min.isr to at most the live brokers and "
    "transaction.state.log.replication.factor",
)
def _txn_log_min_isr(facts: PreflightFacts) -> Outcome:
    # An existing topic keeps the min.insync.replicas it was created with (or was altered to): judge that one.
    topic = _transaction_log(facts)
    if isinstance(topic, Outcome):
        return topic
    if topic.exists:
        return _existing_log_min_isr(facts, topic)
    outcome = _setting_vs_live(
        facts,
        "transaction.state.log.min.isr",
        "writes to __transaction_state fail (NOT_ENOUGH_REPLICAS), so no transaction can commit",
    )
    if outcome.status is Status.FAIL:
        return Outcome(outcome.status, f"__transaction_state does not exist yet; {outcome.message}", outcome.fix)
    if outcome.status is not Status.PASS:
        return outcome
    min_isr = broker_setting(facts, "transaction.state.log.min.isr", max)
    replication = broker_setting(facts, "transaction.state.log.replication.factor", min)
    assert min_isr is not None and replication is not None
    if min_isr[0] > replication[0]:
        return failed(
            f"__transaction_state does not exist yet; transaction.state.log.min.isr {min_isr[0]} of {min_isr[1]} > "
            f"transaction.state.log.replication.factor {replication[0]} of {replication[1]}: once created, writes "
            "to it can never reach enough replicas"
        )
    return passed(f"__transaction_state does not exist yet; {outcome.message}; replication factor {replication[0]}")


def _existing_log_replication(facts: PreflightFacts, topic: InternalTopicFacts, recommended: int) -> Outcome:
    """The existing ``__transaction_state``'s replicas per partition against the replication to expect.

    Kafka gave each partition ``transaction.state.log.replication.factor`` replicas when it created the
    topic; a reassignment may have changed them since, and the brokers' setting is never read again.
    """
    name = topic.name
    fewest, short, applies = _partitions_below(facts, topic, recommended, "transaction.state.log.replication.factor",
                                               min)
    if short:
        return failed(
            f"{len(short)} of {name}'s partitions have fewer than {recommended} replicas with {facts.live_brokers} "
            f"live brokers: {_listed(short)}; losing a broker that holds one loses the state of the transactions "
            f"it coordinates{applies}",
            fix=f"reassign the listed partitions of {name} to {recommended} replicas (kafka-reassign-partitions.sh "
            "--bootstrap-server HOST:PORT --reassignment-json-file FILE --execute); the brokers' "
            "transaction.state.log.replication.factor does not change an existing topic",
        )
    single = " (a single broker, as in the devstack: nothing to replicate to)" if facts.live_brokers == 1 else ""
    return passed(f"each of {name}'s partitions has at least {recommended} replicas ({fewest} at least){single}"
                  f"{applies}")


@rule(
    "EOS203",
    Severity.WARNING,
    "transaction state log is replicated (before it exists: the brokers' replication factor)",
    f"once __transaction_state exists, reassign its partitions to {RECOMMENDED_REPLICATION} replicas (or the "
    "broker count if smaller; kafka-reassign-partitions.sh); before, set transaction.state.log.replication.factor "
    "to that",
)
def _txn_log_durability(facts: PreflightFacts) -> Outcome:
    recommended = recommended_replication(facts)
    if recommended is None:
        return unknown(facts, "live_brokers", "the live broker count was")
    # An existing topic keeps the replicas it was created with (or reassigned to): judge those, as EOS202 does.
    topic = _transaction_log(facts)
    if isinstance(topic, Outcome):
        return topic
    if topic.exists:
        return _existing_log_replication(facts, topic, recommended)
    found = broker_setting(facts, "transaction.state.log.replication.factor", min)
    if found is None:
        return unknown(facts, "broker_configs", "the brokers' configs were")
    value, who = found
    if value < recommended:
        return failed(
            f"__transaction_state does not exist yet; transaction.state.log.replication.factor {value} of {who} "
            f"with {facts.live_brokers} live brokers: once created, losing one broker loses the state of the "
            "transactions it coordinates"
        )
    single = " (a single broker, as in the devstack: nothing to replicate to)" if facts.live_brokers == 1 else ""
    return passed(f"__transaction_state does not exist yet; transaction.state.log.replication.factor {value} of "
                  f"{who}{single}")


@rule(
    "EOS204",
    Severity.ERROR,
    "__consumer_offsets takes writes (or can be created)",
    "bring back the brokers holding the replicas of the listed __consumer_offsets partitions; before the topic "
    "exists, start more brokers or lower offsets.topic.replication.factor" + _TOO_FEW_REPLICAS,
)
def _offsets_replication(facts: PreflightFacts) -> Outcome:
    return _internal_topic_rule(
        facts,
        "__consumer_offsets",
        "offsets.topic.replication.factor",
        "the sink cannot commit offsets and batch markers",
        "the sink cannot commit offsets and batch markers to groups these partitions hold (NOT_ENOUGH_REPLICAS)",
    )


def _partitions_below(facts: PreflightFacts, topic: InternalTopicFacts, bound: int, creation_setting: str,
                      pick: Callable[[Iterable[int]], int]) -> tuple[int, list[str], str]:
    """The fewest replicas of ``topic``'s partitions, those with fewer than ``bound`` (named with their
    replicas), and the words on the brokers' ``creation_setting``, which applied only when Kafka created it."""
    fewest = min(topic.replicas.values(), default=0)
    short = [f"{topic.name}-{p} ({r})" for p, r in sorted(topic.replicas.items()) if r < bound]
    setting = broker_setting(facts, creation_setting, pick)
    applies = "" if setting is None else \
        f"; {creation_setting} {setting[0]} of {setting[1]} applied only when it was created"
    return fewest, short, applies


def _transaction_log(facts: PreflightFacts) -> InternalTopicFacts | Outcome:
    """``__transaction_state``'s facts, or the outcome saying why whether it exists was not read."""
    if facts.internal_topics is None:
        return unknown(facts, "internal_topics", "the metadata of __transaction_state was")
    topic = facts.internal_topics.get("__transaction_state")
    if topic is None:
        reason = facts.unavailable.get("__transaction_state") or facts.unavailable.get("internal_topics")
        return not_checked("not checked: whether __transaction_state exists was not read"
                           + (f" ({reason})" if reason else ""))
    return topic
