"""EOS2xx: the Kafka cluster and the pipeline's topics pass on good facts and fail naming the values."""

from __future__ import annotations

import dataclasses

import pytest

from airflow_provider_eos.core.preflight import RULES, Severity, Status, evaluate
from tests.unit.preflight.builders import (
    DAY_MS,
    Case,
    Mutation,
    assert_fails,
    assert_passes,
    broker,
    case_id,
    facts_,
    good_facts,
    good_spec,
    internal,
    no_internal,
    single_broker,
    topic,
    unchanged,
)

PASSES: list[Case] = [
    *unchanged("EOS2"),
    ("EOS201", single_broker, ["__transaction_state exists", "min.insync.replicas 1"]),
    ("EOS201", lambda f: no_internal("__transaction_state")(single_broker(f)), ["does not exist yet", "1 live broker"]),
    # A rolling restart: 3 brokers, one down. The existing topics keep 2 of 3 replicas in sync, min ISR 2: writable.
    ("EOS201", lambda f: facts_(live_brokers=2)(internal("__transaction_state", 3, 2)(f)),
     ["50 partitions", "at least 2 in-sync", "min.insync.replicas 2", "50 with a replica out of sync"]),
    ("EOS204", lambda f: facts_(live_brokers=2)(internal("__consumer_offsets", 3, 2)(f)),
     ["__consumer_offsets exists", "out of sync"]),
    ("EOS204", single_broker, ["__consumer_offsets exists", "min.insync.replicas 1"]),
    # The brokers' configs unread: the existing topic is still judged by what it has.
    ("EOS204", facts_(broker_configs=None), ["min.insync.replicas 2", "not compared"]),
    ("EOS203", single_broker, ["single broker"]),
    # The existing log's 3 replicas per partition: the brokers' replication factor 1 is no longer used.
    ("EOS203", broker("transaction.state.log.replication.factor", "1"),
     ["each of __transaction_state's partitions has at least 3 replicas", "factor 1 of brokers 1, 2, 3 applied only"]),
    ("EOS203", lambda f: no_internal("__transaction_state")(f), ["does not exist yet", "replication.factor 3"]),
    # The existing log's own min ISR 2 fits its 3 replicas: the brokers' min.isr 4 (> 3 live) is no longer used.
    ("EOS202", broker("transaction.state.log.min.isr", "4"),
     ["min.insync.replicas 2 <= the replicas of each of its partitions (at least 3)", "applied only when it was"]),
    # One broker down: 2 live < the brokers' min.isr 3, but the log was created with min ISR 2 (EOS201 judges the ISR).
    ("EOS202", lambda f: facts_(live_brokers=2)(broker("transaction.state.log.min.isr", "3")(f)),
     ["min.insync.replicas 2 <="]),
    ("EOS202", lambda f: no_internal("__transaction_state")(f), ["does not exist yet", "replication factor 3"]),
    ("EOS207", topic("orders-in", replication_factor=2, min_insync_replicas=2), []),
    ("EOS208", single_broker, []),
    ("EOS209", single_broker, []),
    ("EOS210", topic("orders-out", cleanup_policy="compact,delete"), ["compact,delete"]),
    ("EOS212", topic("orders-in", retention_ms=-1), ["-1"]),
    ("EOS212", topic("orders-in", retention_ms=-1, retention_bytes=None), ["-1"]),  # retention.bytes not read
]

FAILS: list[Case] = [
    # Before the topic exists, the brokers' factor must fit the live brokers.
    ("EOS201", lambda f: no_internal("__transaction_state")(broker("transaction.state.log.replication.factor", "4")(f)),
     ["__transaction_state does not exist yet", "4", "3 live broker", "cannot be created"]),
    ("EOS201", lambda f: no_internal("__transaction_state")(facts_(live_brokers=1)(f)), ["3", "1 live broker"]),
    # Once it exists: fewer in-sync replicas than its min.insync.replicas refuse writes (an ERROR) ...
    ("EOS201", internal("__transaction_state", p7=(3, 1), p12=(3, 0)),
     ["2 partition(s) of __transaction_state", "min.insync.replicas 2",
      "__transaction_state-7 (1 of 3 replicas in sync)", "__transaction_state-12 (0 of 3", "NOT_ENOUGH_REPLICAS"]),
    # ... fewer replicas than the brokers' factor is less durable only (a WARNING, see the test below).
    ("EOS201", broker("transaction.state.log.replication.factor", "4"),
     ["50 partition(s) have fewer replicas than transaction.state.log.replication.factor 4",
      "__transaction_state-0 (3)", "and 40 more"]),
    # Before __transaction_state exists, the brokers' settings it will be created with ...
    ("EOS202", lambda f: no_internal("__transaction_state")(broker("transaction.state.log.min.isr", "4")(f)),
     ["does not exist yet", "min.isr 4", "3 live"]),
    (
        "EOS202",
        lambda f: no_internal("__transaction_state")(broker("transaction.state.log.replication.factor", "2")(
            broker("transaction.state.log.min.isr", "3")(f)
        )),
        ["min.isr 3", "replication.factor 2"],
    ),
    # ... once it exists, its own min.insync.replicas (altered since, or set by other settings) vs its replicas.
    ("EOS202", internal("__transaction_state", 3, min_isr=4),
     ["__transaction_state's min.insync.replicas 4 > the replicas of 50 of its partitions", "__transaction_state-0 (3)",
      "transaction.state.log.min.isr 2 of brokers 1, 2, 3 applied only when it was created"]),
    ("EOS202", internal("__transaction_state", 3, min_isr=2, p9=(1, 1)),
     ["1 of its partitions: __transaction_state-9 (1)"]),
    # Before __transaction_state exists, the brokers' replication factor it will be created with ...
    ("EOS203", lambda f: no_internal("__transaction_state")(broker("transaction.state.log.replication.factor", "1")(f)),
     ["does not exist yet", "replication.factor 1", "3 live brokers"]),
    # ... once it exists, its partitions' own replicas (a reassignment, or a topic created with other settings).
    ("EOS203", internal("__transaction_state", 1),
     ["50 of __transaction_state's partitions have fewer than 3 replicas with 3 live brokers",
      "__transaction_state-0 (1)",
      "transaction.state.log.replication.factor 3 of brokers 1, 2, 3 applied only when it was created"]),
    ("EOS203", internal("__transaction_state", 3, p7=(2, 2)), ["1 of __transaction_state's partitions",
                                                              "__transaction_state-7 (2)"]),
    ("EOS204", lambda f: no_internal("__consumer_offsets")(broker("offsets.topic.replication.factor", "5")(f)),
     ["5", "3 live"]),
    ("EOS204", internal("__consumer_offsets", 3, 1), ["50 partition(s) of __consumer_offsets", "1 of 3"]),
    ("EOS204", internal("__consumer_offsets", 2, min_isr=1, p3=(1, 1)), ["__consumer_offsets-3 (1)", "offsets.topic"]),
    ("EOS205", topic("orders-in", exists=False), ["orders-in"]),
    ("EOS206", topic("orders-dlq", exists=False), ["dead-letter topic 'orders-dlq'"]),
    ("EOS206", topic("orders-out", exists=False), ["output topic 'orders-out'"]),
    ("EOS207", topic("orders-out", min_insync_replicas=4), ["min.insync.replicas 4", "replication factor 3"]),
    ("EOS207", topic("orders-in", replication_factor=1, min_insync_replicas=2), ["orders-in"]),
    ("EOS208", facts_(live_brokers=1), ["min.insync.replicas 2", "1 live broker"]),
    ("EOS209", topic("orders-out", replication_factor=1, min_insync_replicas=1), ["replication factor 1"]),
    ("EOS209", topic("orders-dlq", min_insync_replicas=1), ["min.insync.replicas 1"]),
    ("EOS210", topic("orders-out", cleanup_policy="compact"), ["compact"]),
    ("EOS211", topic("orders-in", unclean_leader_election=True), ["orders-in", "unclean"]),
    ("EOS212", topic("orders-in", retention_ms=DAY_MS), [str(DAY_MS), "259200000"]),
    # Size-based deletion: unlimited retention.ms does not keep a partition beyond retention.bytes.
    ("EOS212", topic("orders-in", retention_ms=-1, retention_bytes=1_073_741_824),
     ["input topic 'orders-in'", "retention.bytes 1073741824"]),
    ("EOS212", topic("orders-in", retention_ms=DAY_MS, retention_bytes=0), ["retention.ms", "retention.bytes 0"]),
]


@pytest.mark.parametrize("case", PASSES, ids=case_id)
def test_rule_passes(case: Case) -> None:
    assert_passes(case)


@pytest.mark.parametrize("case", FAILS, ids=case_id)
def test_rule_fails_naming_the_values(case: Case) -> None:
    assert_fails(case)


def test_an_internal_topic_with_fewer_replicas_than_the_factor_only_warns() -> None:
    report = evaluate(internal("__consumer_offsets", 2, min_isr=1, p3=(1, 1))(good_facts()))
    finding = report.finding("EOS204")
    assert finding.status is Status.FAIL and finding.severity is Severity.WARNING, finding
    assert finding in report.warnings and report.ok
    assert finding.fix and "kafka-reassign-partitions.sh" in finding.fix
    # Below its min.insync.replicas it is an error again, whatever the replica count.
    report = evaluate(internal("__consumer_offsets", 2, 1)(good_facts()))
    assert report.finding("EOS204").severity is Severity.ERROR and not report.ok


UNDER_MIN_ISR = "kafka-topics.sh --describe --topic {0} --under-min-isr-partitions lists what is left"


def test_below_min_isr_the_fix_brings_back_the_brokers_only_where_the_partitions_have_the_replicas() -> None:
    # Brokers down: each partition has its 3 replicas, 1 or 0 in sync; bringing them back mends it.
    down = evaluate(internal("__transaction_state", p7=(3, 1), p12=(3, 0))(good_facts())).finding("EOS201")
    assert down.fix == ("bring back the brokers holding those partitions' replicas and wait until they are in sync ("
                        + UNDER_MIN_ISR.format("__transaction_state") + ")")
    assert "no broker coming back" not in down.message
    # A partition with 1 replica under min.insync.replicas 2: no broker coming back makes it writable; the fix is
    # EOS202's (which fails on it too): lower the topic's min ISR, or give the partition more replicas.
    for code, name in (("EOS201", "__transaction_state"), ("EOS204", "__consumer_offsets")):
        too_few = evaluate(internal(name, 3, min_isr=2, p9=(1, 1))(good_facts())).finding(code)
        assert too_few.status is Status.FAIL and too_few.severity is Severity.ERROR, too_few
        assert too_few.message.startswith(
            f"1 partition(s) of {name} have fewer in-sync replicas than its min.insync.replicas 2: "
            f"{name}-9 (1 of 1 replicas in sync); "), too_few.message
        assert too_few.message.endswith(
            "; each has fewer replicas than min.insync.replicas 2, so no broker coming back makes them writable")
        assert too_few.fix == (
            f"lower {name}'s min.insync.replicas to 1 or less (kafka-configs.sh --bootstrap-server HOST:PORT --alter "
            f"--entity-type topics --entity-name {name} --add-config min.insync.replicas=1), or reassign those "
            "partitions to 2 replicas or more (kafka-reassign-partitions.sh)"), too_few.fix
        assert "bring back" not in too_few.fix
    # Both at once: each cause with its own fix.
    mixed = evaluate(internal("__transaction_state", 3, min_isr=3, p2=(2, 2), p5=(3, 1))(good_facts()))
    finding = mixed.finding("EOS201")
    assert "2 partition(s) of __transaction_state" in finding.message, finding.message
    assert finding.message.endswith("; 1 of them have fewer replicas than min.insync.replicas 3: __transaction_state-2 "
                                    "(2), so no broker coming back makes them writable"), finding.message
    assert finding.fix == (
        "lower __transaction_state's min.insync.replicas to 2 or less (kafka-configs.sh --bootstrap-server HOST:PORT "
        "--alter --entity-type topics --entity-name __transaction_state --add-config min.insync.replicas=2), or "
        "reassign the partitions with too few replicas to 3 replicas or more (kafka-reassign-partitions.sh); for the "
        "others, bring back the brokers holding their replicas and wait until they are in sync ("
        + UNDER_MIN_ISR.format("__transaction_state") + ")"), finding.fix
    # EOS202's own fix, which EOS201's now shares, is unchanged.
    assert mixed.finding("EOS202").fix == (
        "lower __transaction_state's min.insync.replicas to 2 or less (kafka-configs.sh --bootstrap-server HOST:PORT "
        "--alter --entity-type topics --entity-name __transaction_state --add-config min.insync.replicas=2), or "
        "reassign the listed partitions to 3 replicas or more (kafka-reassign-partitions.sh); the brokers' "
        "transaction.state.log.min.isr does not change an existing topic")


def test_the_catalog_fix_of_the_internal_topics_names_a_min_isr_above_the_replicas() -> None:
    for code, name in (("EOS201", "__transaction_state"), ("EOS204", "__consumer_offsets")):
        fix = next(r for r in RULES if r.code == code).fix
        assert fix.startswith(f"bring back the brokers holding the replicas of the listed {name} partitions"), fix
        assert fix.endswith("a partition with fewer replicas than the topic's min.insync.replicas takes no write "
                            "whatever comes back: lower the topic's min.insync.replicas (kafka-configs.sh) or raise "
                            "the partition's replication factor (kafka-reassign-partitions.sh)"), fix


def test_an_unreadable_internal_topic_is_not_checked_naming_the_reason() -> None:
    facts = good_facts()
    denied = {"__transaction_state": "TOPIC_AUTHORIZATION_FAILED: denied"}
    unread = dataclasses.replace(facts, internal_topics={"__consumer_offsets": facts.internal_topics[
        "__consumer_offsets"]}, unavailable=denied)
    finding = evaluate(unread).finding("EOS201")
    assert finding.status is Status.NOT_CHECKED and finding.fix is None
    assert finding.message == (
        "not checked: whether __transaction_state exists was not read (TOPIC_AUTHORIZATION_FAILED: denied)"
    )
    no_min_isr = internal("__transaction_state", min_isr=None)(dataclasses.replace(facts, unavailable=denied))
    finding = evaluate(no_min_isr).finding("EOS201")
    assert finding.status is Status.NOT_CHECKED
    assert "min.insync.replicas was not read (TOPIC_AUTHORIZATION_FAILED: denied)" in finding.message


def _hidden(name: str) -> Mutation:
    """``name`` refused to the principal (TOPIC_AUTHORIZATION_FAILED): nothing read of it."""
    return topic(name, exists=False, refused=True, partitions=None, replication_factor=None, min_insync_replicas=None,
                 cleanup_policy=None, retention_ms=None, unclean_leader_election=None, retention_bytes=None)


def test_a_hidden_input_topic_names_the_missing_acl_and_the_command_not_create_it() -> None:
    """A topic the principal may not DESCRIBE is left out of the metadata: the fix is the ACL, not creating it."""
    spec = good_spec(kafka={"bootstrap.servers": "b1:9092", "security.protocol": "SASL_SSL",
                            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "orders-job", "sasl.password": "pw"})
    report = evaluate(_hidden("orders-in")(dataclasses.replace(good_facts(), spec=spec)))
    finding = report.finding("EOS205")
    assert finding.status is Status.FAIL and finding.severity is Severity.ERROR and not report.ok, finding
    assert finding.message.startswith("input topic 'orders-in' is hidden: Kafka refused User:orders-job Metadata: "
                                      "it needs DESCRIBE on TOPIC 'orders-in'"), finding.message
    assert "whether it exists cannot be told" in finding.message and "does not exist" not in finding.message
    assert finding.fix is not None and "create" not in finding.fix, finding.fix
    assert "READ on TOPIC 'orders-in' (LITERAL)" in finding.fix, finding.fix
    assert "eos acls --spec FILE --principal User:orders-job --role job --apply" in finding.fix, finding.fix
    # The topic's other rules do not call it missing: they did not read it.
    retention = report.finding("EOS212")
    assert retention.status is Status.NOT_CHECKED and "orders-in (hidden: no DESCRIBE on it" in retention.message


def test_a_hidden_sink_topic_with_a_missing_one_names_both() -> None:
    facts = topic("orders-dlq", exists=False)(_hidden("orders-out")(good_facts()))
    finding = evaluate(facts).finding("EOS206")
    assert finding.status is Status.FAIL, finding
    assert "output topic 'orders-out' is hidden" in finding.message, finding.message
    assert "dead-letter topic 'orders-dlq' does not exist" in finding.message, finding.message
    assert "DESCRIBE on TOPIC 'orders-out'" in finding.message and "User:NAME" in str(finding.fix), finding


def test_an_unlisted_topic_the_broker_did_not_answer_for_is_not_checked_naming_why() -> None:
    facts = good_facts()
    assert facts.topics is not None
    unread = dataclasses.replace(
        facts, topics={k: v for k, v in facts.topics.items() if k != "orders-in"},
        unavailable={"topic orders-in": "DescribeTopics(orders-in): _TIMED_OUT: timed out"})
    finding = evaluate(unread).finding("EOS205")
    assert finding.status is Status.NOT_CHECKED, finding
    assert finding.message == ("not checked: topics orders-in were not read "
                               "(DescribeTopics(orders-in): _TIMED_OUT: timed out)")
