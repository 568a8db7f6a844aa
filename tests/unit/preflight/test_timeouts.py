"""EOS1xx: the timeout chain passes on good facts and fails naming the values."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.preflight import DEFAULT_LONGEST_EXPECTED_PAUSE_MS, Status, evaluate
from airflow_provider_eos.core.preflight.facts import KAFKA_BROKER_DEFAULTS
from tests.unit.preflight.builders import (
    BROKER,
    DAY_MS,
    Case,
    assert_fails,
    assert_passes,
    broker,
    case_id,
    facts_,
    good_facts,
    producer_config,
    spec,
    unchanged,
)

PASSES: list[Case] = [
    *unchanged("EOS1"),
    ("EOS101", spec(trigger="available_now"), ["available_now"]),
    ("EOS101", spec(trigger="59 seconds"), ["59000"]),
    ("EOS103", spec(batch_budget_ms=48_000), ["48000"]),
    ("EOS104", broker("transaction.max.timeout.ms", "60000"), ["60000"]),
    ("EOS104", broker("transaction.max.timeout.ms", None), ["Kafka's default"]),
    ("EOS105", spec(kafka={"bootstrap.servers": "b:1", "message.timeout.ms": 300000}), ["300000", "caps"]),
    ("EOS107", facts_(longest_expected_pause_ms=DAY_MS), ["604800000"]),
    ("EOS108", lambda f: f, ["offsets.retention.minutes 10080", "604800000 ms (7d", "259200000"]),
    # A broker that does not report it runs Kafka's default, 7 days.
    ("EOS108", broker("offsets.retention.minutes", None), ["10080", "Kafka's default"]),
]

FAILS: list[Case] = [
    ("EOS101", spec(trigger="2 minutes"), ["120000", "60000"]),
    ("EOS101", spec(trigger="60 seconds"), ["60000"]),
    ("EOS102", spec(batch_budget_ms=60_000), ["batch_budget_ms 60000", "60000"]),
    ("EOS103", spec(batch_budget_ms=50_000), ["50000", "48000"]),
    ("EOS103", spec(trigger="55 seconds"), ["55000"]),
    ("EOS104", broker("transaction.max.timeout.ms", "30000", only=2), ["30000", "broker 2", "60000"]),
    ("EOS105", producer_config(**{"message.timeout.ms": 90_000}), ["90000", "60000"]),
    ("EOS106", spec(kafka={"bootstrap.servers": "b:1", "acks": "1"}), ["acks", "'all'"]),
    ("EOS106", spec(kafka={"bootstrap.servers": "b:1", "transaction.timeout.ms": 900000}), ["900000", "60000"]),
    ("EOS107", broker("transactional.id.expiration.ms", str(DAY_MS)), [str(DAY_MS), "259200000"]),
    # One day of offsets retention on one broker: a three-day pause outlives the sink group's markers.
    ("EOS108", broker("offsets.retention.minutes", "1440", only=3),
     ["offsets.retention.minutes 1440", "86400000 ms", "broker 3", "259200000", "batch markers"]),
    # Equal is not enough: the offsets expire as the pause ends.
    ("EOS108", facts_(longest_expected_pause_ms=7 * DAY_MS), ["10080", str(7 * DAY_MS)]),
]


@pytest.mark.parametrize("case", PASSES, ids=case_id)
def test_rule_passes(case: Case) -> None:
    assert_passes(case)


@pytest.mark.parametrize("case", FAILS, ids=case_id)
def test_rule_fails_naming_the_values(case: Case) -> None:
    assert_fails(case)


def test_no_batch_budget_and_available_now_leave_the_budget_rules_not_checked() -> None:
    report = evaluate(spec(trigger="available_now", batch_budget_ms=None)(good_facts()))
    assert report.finding("EOS102").status is Status.NOT_CHECKED
    assert "batch_budget_ms" in report.finding("EOS102").message
    assert report.finding("EOS103").status is Status.NOT_CHECKED


def test_the_default_pause_is_three_days_and_below_kafkas_expiration_default() -> None:
    assert DEFAULT_LONGEST_EXPECTED_PAUSE_MS == 3 * DAY_MS < int(BROKER["transactional.id.expiration.ms"])


def test_the_offsets_retention_fix_names_the_broker_setting_and_the_pause_in_minutes() -> None:
    finding = evaluate(broker("offsets.retention.minutes", "1440")(good_facts())).finding("EOS108")
    assert finding.status is Status.FAIL and finding.severity.value == "WARNING"
    assert finding.fix is not None
    assert "offsets.retention.minutes to more than 4320 on every broker" in finding.fix
    assert "longest_expected_pause_ms" in finding.fix and "eos repair align" in finding.fix


def test_the_default_pause_is_below_kafkas_offsets_retention_default() -> None:
    assert KAFKA_BROKER_DEFAULTS["offsets.retention.minutes"] * 60_000 > DEFAULT_LONGEST_EXPECTED_PAUSE_MS
