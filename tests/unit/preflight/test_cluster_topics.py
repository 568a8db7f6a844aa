"""EOS2xx: the Kafka cluster and the pipeline's topics pass on good facts and fail naming the values."""

from __future__ import annotations

import pytest

from tests.unit.preflight.builders import (
    DAY_MS,
    Case,
    assert_fails,
    assert_passes,
    broker,
    case_id,
    facts_,
    single_broker,
    topic,
    unchanged,
)

PASSES: list[Case] = [
    *unchanged("EOS2"),
    ("EOS201", single_broker, ["1 live broker"]),
    ("EOS203", single_broker, ["single broker"]),
    ("EOS207", topic("orders-in", replication_factor=2, min_insync_replicas=2), []),
    ("EOS208", single_broker, []),
    ("EOS209", single_broker, []),
    ("EOS210", topic("orders-out", cleanup_policy="compact,delete"), ["compact,delete"]),
    ("EOS212", topic("orders-in", retention_ms=-1), ["-1"]),
    ("EOS212", topic("orders-in", retention_ms=-1, retention_bytes=None), ["-1"]),  # retention.bytes not read
]

FAILS: list[Case] = [
    ("EOS201", broker("transaction.state.log.replication.factor", "4"), ["4", "3 live broker"]),
    ("EOS201", lambda f: facts_(live_brokers=1)(f), ["3", "1 live broker"]),
    ("EOS202", broker("transaction.state.log.min.isr", "4"), ["min.isr 4", "3 live"]),
    (
        "EOS202",
        lambda f: broker("transaction.state.log.replication.factor", "2")(
            broker("transaction.state.log.min.isr", "3")(f)
        ),
        ["min.isr 3", "replication.factor 2"],
    ),
    ("EOS203", broker("transaction.state.log.replication.factor", "1"), ["1", "3 live brokers"]),
    ("EOS204", broker("offsets.topic.replication.factor", "5"), ["5", "3 live"]),
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
