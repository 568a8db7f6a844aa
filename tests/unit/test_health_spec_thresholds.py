"""A spec's ``health_thresholds``: checked on load as the health check's overrides are, applied where the
thresholds are derived from the spec, and beaten only by an explicit override (design note 72)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.health import HealthError, HealthStatus, HealthThresholds, LagWindow
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.spec.json_schema import field_comments
from airflow_provider_eos.usecases.health import evaluate as evaluate_spec
from tests.support.health_samples import IN0, TH, finding, part, sample, spec

#: Thresholds a job of batches that compute long before their first row would set.
PATIENT = {"warn_after_ms": 3_600_000, "stop_after_ms": 7_200_000}


def test_the_specs_thresholds_replace_the_derived_ones_and_the_brokers_maximum() -> None:
    derived = HealthThresholds.from_spec(spec(trigger="10 seconds"))
    own = HealthThresholds.from_spec(spec(trigger="10 seconds", health_thresholds={
        **PATIENT, "input_hang_after_ms": 1_800_000, "min_samples": 5}), transaction_max_timeout_ms=600_000)

    assert own == derived.model_copy(update={**PATIENT, "input_hang_after_ms": 1_800_000, "min_samples": 5})
    # What the spec leaves out is still derived, the brokers' maximum included.
    partial = HealthThresholds.from_spec(spec(health_thresholds={"stop_after_ms": 999}), transaction_max_timeout_ms=5)
    assert (partial.stop_after_ms, partial.warn_after_ms, partial.input_hang_after_ms) == (999, 120_000, 5)


def test_the_verdict_honours_the_specs_thresholds_and_an_explicit_override_beats_them() -> None:
    # Input has waited ten minutes without a commit: four cycles of the derived thresholds are 4 minutes.
    window = LagWindow([sample(t, [part(100, 40, waiting_s=600)], commit_s=-600) for t in (0, 10, 20)])
    derived = spec(trigger="10 seconds")
    patient = spec(trigger="10 seconds", health_thresholds=PATIENT)

    assert evaluate_spec(derived, window).status is HealthStatus.UNHEALTHY
    report = evaluate_spec(patient, window)
    assert report.status is HealthStatus.HEALTHY, report.findings
    assert report.thresholds.stop_after_ms == PATIENT["stop_after_ms"]
    overridden = evaluate_spec(patient, window, thresholds={"stop_after_ms": 240_000, "warn_after_ms": 120_000})
    assert overridden.status is HealthStatus.UNHEALTHY
    assert finding(overridden, "commit_age")[0].status is HealthStatus.UNHEALTHY


def test_a_spec_refuses_a_threshold_the_health_check_would_refuse_naming_the_value_and_the_fix(
    tmp_path: Path,
) -> None:
    file = tmp_path / "p.yaml"
    file.write_text(textwrap.dedent("""\
        name: p
        kafka: {bootstrap.servers: "x:9092"}
        input_topics: [in]
        output_topic: out
        group_id: g
        transactional_id_prefix: p-eos
        checkpoint_location: /data/ck/p
        health_thresholds:
          warn_after_ms: 60000
          stop_after_ms: 0
        """))
    with pytest.raises(SpecError) as refused:
        PipelineSpec.load(file)
    assert ("health_thresholds['stop_after_ms'] (line 10, column 3): health threshold stop_after_ms is 0; set "
            "stop_after_ms to a positive integer (milliseconds)") in str(refused.value)

    cases = {
        "stop_after": "unknown health threshold(s) stop_after; use only warn_after_ms, stop_after_ms, hang_after_ms, "
                      "lingering_after_ms, input_hang_after_ms, min_samples",
        "min_samples": "health threshold min_samples is 1; a trend needs at least 2 samples; set min_samples to 2",
        "hang_after_ms": "health threshold hang_after_ms is True; set hang_after_ms to a positive integer",
        "input_hang_after_ms": "health threshold input_hang_after_ms is '900000'; set input_hang_after_ms to a",
    }
    values = {"stop_after": 5, "min_samples": 1, "hang_after_ms": True, "input_hang_after_ms": "900000"}
    for name, message in cases.items():
        with pytest.raises(SpecError) as refused:
            PipelineSpec.from_dict({**spec().to_dict(), "health_thresholds": {name: values[name]}})
        assert f"health_thresholds['{name}']: {message}" in str(refused.value)
        # The same words as the sensor's and the CLI's overrides: one rule.
        with pytest.raises(HealthError) as overriding:
            TH.with_overrides({name: values[name]})
        assert f"{overriding.value.message}; {overriding.value.fix}".startswith(message)


def test_a_spec_without_thresholds_derives_them_all_and_its_thresholds_survive_its_json_form() -> None:
    assert spec().health_thresholds == {}
    assert HealthThresholds.from_spec(spec()) == HealthThresholds.from_spec(spec(health_thresholds={}))
    own = spec(health_thresholds=PATIENT)
    assert PipelineSpec.from_dict(own.to_dict()) == own
    assert own.with_overrides(batch_budget_ms=1000).health_thresholds == PATIENT


def test_the_fields_documentation_names_every_threshold() -> None:
    documented = field_comments(PipelineSpec)["health_thresholds"]
    assert all(f"`{name}`" in documented for name in HealthThresholds.model_fields), documented


def test_an_unread_brokers_maximum_names_the_specs_key_and_a_spec_threshold_silences_it() -> None:
    refused = "Kafka refused User:p-health DescribeConfigs"
    pinned = [sample(t, [part(1000, 1000, hwm=1200, tp=IN0)], transaction_max_timeout_unread=refused) for t in (0, 30)]

    (note,) = evaluate_spec(spec(trigger="10 seconds"), LagWindow(pinned)).notes
    assert "the threshold: the spec's health_thresholds, the health sensor's thresholds" in note
    silenced = spec(trigger="10 seconds", health_thresholds={"input_hang_after_ms": 3_600_000})
    assert not evaluate_spec(silenced, LagWindow(pinned)).notes
