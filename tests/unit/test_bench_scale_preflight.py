"""The scale bench's synthetic pre-flight facts (bench/scale.py): a cluster's shape, internal topics included."""

from __future__ import annotations

from airflow_provider_eos.core.acls import INTERNAL_TOPICS
from airflow_provider_eos.core.preflight import Status, evaluate
from bench.scale import INTERNAL_TOPIC_PARTITIONS, preflight_synthetic, synthetic_preflight_facts


def test_the_synthetic_facts_have_the_internal_topics_so_eos201_and_eos204_are_judged() -> None:
    facts = synthetic_preflight_facts(3)
    assert facts.internal_topics is not None and set(facts.internal_topics) == set(INTERNAL_TOPICS)
    findings = {f.code: f for f in evaluate(facts).findings}
    for code, topic in (("EOS201", "__transaction_state"), ("EOS204", "__consumer_offsets")):
        assert findings[code].status is Status.PASS, findings[code].message
        assert f"{topic} exists: {INTERNAL_TOPIC_PARTITIONS} partitions" in findings[code].message


def test_the_timed_evaluate_leaves_neither_internal_topic_rule_unchecked() -> None:
    result = preflight_synthetic(topics=3, repetitions=1)
    assert result["ok"] and not result["errors"]
    assert not {"EOS201", "EOS204"} & set(result["not_checked"]), result["not_checked"]
