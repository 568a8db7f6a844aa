"""The pre-flight catalog: stable codes, every rule tested both ways, and "not checked" without the facts."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from airflow_provider_eos.core.preflight import RULES, PreflightFacts, Severity, Status, evaluate
from airflow_provider_eos.core.presentation import preflight_summary, preflight_text
from tests.unit.preflight import (
    test_broker_protocol,
    test_cluster_topics,
    test_naming_ownership,
    test_security,
    test_spark_checkpoint,
    test_timeouts,
    test_writers,
)
from tests.unit.preflight.builders import CODES, good_facts, good_spec, topic

FAMILIES = (test_timeouts, test_cluster_topics, test_broker_protocol, test_spark_checkpoint, test_writers,
            test_naming_ownership, test_security)
# Rules that read only the spec: they can always be checked. EOS314 and EOS316 read only the spec
# when it says `writers: auto` (the job decides at start), as good_spec does.
SPEC_ONLY = {
    "EOS101", "EOS301", "EOS302", "EOS303", "EOS304", "EOS306", "EOS307", "EOS309", "EOS311", "EOS312",
    "EOS313", "EOS314", "EOS316", "EOS317", "EOS319",
}


def test_the_good_facts_pass_every_rule() -> None:
    report = evaluate(good_facts())
    assert [(f.code, f.status) for f in report.findings] == [(code, Status.PASS) for code in CODES], \
        preflight_text(report)
    assert report.ok


def test_every_rule_has_a_passing_and_a_failing_test() -> None:
    assert {c for family in FAMILIES for c, _, _ in family.FAILS} == set(CODES)
    assert {c for family in FAMILIES for c, _, _ in family.PASSES} == set(CODES)


def test_the_catalog_has_stable_unique_codes_by_area() -> None:
    assert len(RULES) >= 20
    assert len(set(CODES)) == len(CODES) and sorted(CODES) == CODES
    areas = {code[:4] for code in CODES}
    assert areas == {"EOS1", "EOS2", "EOS3", "EOS4", "EOS5"}
    for r in RULES:
        assert r.title and r.fix and isinstance(r.severity, Severity)
    # Pinned so a renumbering (which breaks alerting on codes) is a deliberate change.
    assert {r.code: r.severity.value for r in RULES}["EOS104"] == "ERROR"
    assert {r.code: r.severity.value for r in RULES}["EOS402"] == "WARNING"
    assert {r.code: r.severity.value for r in RULES}["EOS311"] == "ERROR"
    assert {r.code: r.severity.value for r in RULES}["EOS312"] == "WARNING"


# -- not checked ---------------------------------------------------------------------------------

NOT_CHECKED: list[tuple[str, dict[str, Any]]] = [
    # EOS201-EOS204 judge the existing internal topics by their replicas and min ISR, without the brokers' configs.
    ("broker_configs", {"EOS104", "EOS107", "EOS108"}),
    ("live_brokers", {"EOS203", "EOS208", "EOS209"}),
    ("topics", {*(f"EOS2{n:02d}" for n in range(5, 13)), "EOS315"}),
    ("internal_topics", {"EOS201", "EOS202", "EOS203", "EOS204"}),
    ("group_members", {"EOS401"}),
    ("group_offsets", {"EOS308", "EOS407"}),
    ("transactions", {"EOS402"}),
    ("other_specs", {"EOS403", "EOS404", "EOS405", "EOS406", "EOS408"}),
    ("checkpoint", {"EOS308", "EOS310"}),
    ("master", {"EOS305"}),
    ("producer_config", {"EOS105", "EOS106"}),
    ("permissions", {"EOS501", "EOS502"}),
    ("broker_protocol", {"EOS213", "EOS214", "EOS215"}),
]


@pytest.mark.parametrize(("fact", "codes"), NOT_CHECKED, ids=[f for f, _ in NOT_CHECKED])
def test_an_unknown_fact_makes_its_rules_not_checked(fact: str, codes: set[str]) -> None:
    report = evaluate(dataclasses.replace(good_facts(), **{fact: None}))
    assert {f.code for f in report.not_checked} == codes
    for finding in report.not_checked:
        assert finding.message.startswith("not checked"), finding
        assert finding.fix is None


def test_nothing_known_but_the_spec_checks_only_the_spec_rules() -> None:
    report = evaluate(PreflightFacts(spec=good_spec(trigger="available_now", batch_budget_ms=None)))
    assert {f.code for f in report.findings if f.status is not Status.NOT_CHECKED} == SPEC_ONLY
    assert report.ok  # nothing known to be wrong; the table says what was not checked
    summary = preflight_summary(report)
    assert f"{len(RULES)} not checked" not in summary and "37 not checked" in summary


def test_not_checked_names_the_reason_the_gatherer_recorded() -> None:
    facts = dataclasses.replace(
        good_facts(), broker_configs=None, unavailable={"broker_configs": "CLUSTER_AUTHORIZATION_FAILED: denied"}
    )
    finding = evaluate(facts).finding("EOS104")
    assert finding.status is Status.NOT_CHECKED
    assert "CLUSTER_AUTHORIZATION_FAILED: denied" in finding.message


def test_a_topic_rule_checks_what_it_can_and_names_the_rest() -> None:
    facts = topic("orders-out", exists=False)(topic("orders-dlq", min_insync_replicas=None)(good_facts()))
    finding = evaluate(facts).finding("EOS208")
    assert finding.status is Status.NOT_CHECKED
    assert "orders-out does not exist" in finding.message and "orders-dlq not read" in finding.message
    assert evaluate(topic("orders-out", exists=False)(good_facts())).finding("EOS209").status is Status.PASS
