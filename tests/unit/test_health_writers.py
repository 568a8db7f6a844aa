"""The health report says which writer the job uses: the checkpoint's record, else the spec (text and JSON)."""

from __future__ import annotations

import datetime as dt
import json

from airflow_provider_eos.core.health import HealthReport, HealthSample
from airflow_provider_eos.core.presentation import health_text
from airflow_provider_eos.core.spec import Writers
from airflow_provider_eos.core.verification import writers_in_use
from airflow_provider_eos.core.writers_choice import WritersChoice
from tests.support.health_samples import part, run, sample

RECORDED = WritersChoice(
    writers=Writers.EXECUTORS,
    requested=Writers.AUTO,
    reason="plan is partition-aligned",
    query_id="q1",
    batch_id=0,
    decided_at=dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC),
)


def with_writers(s: HealthSample, recorded: WritersChoice | None, spec: Writers | None) -> HealthSample:
    return s.model_copy(update={"writers": writers_in_use(recorded, spec)})


def test_the_report_shows_the_recorded_writer_in_text_and_json() -> None:
    samples = [with_writers(sample(t, [part(100, 100, 3)]), RECORDED, Writers.AUTO) for t in (0, 5)]
    report = run(samples)
    assert report.writers == writers_in_use(RECORDED, Writers.AUTO)
    lines = health_text(report).splitlines()
    assert lines[2] == (
        "Writers: executors, as recorded in the checkpoint's eos/writers.json (requested auto, decided at batch 0: "
        "plan is partition-aligned)"
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert data["writers"]["writers"] == "executors" and data["writers"]["source"] == "recorded"
    assert data["writers"]["choice"]["reason"] == "plan is partition-aligned"
    assert HealthReport.model_validate(data) == report


def test_the_report_shows_the_spec_writer_when_nothing_is_recorded() -> None:
    report = run([with_writers(sample(0, [part(100, 100, 3)]), None, Writers.DRIVER)])
    assert "Writers: driver, from the spec (the checkpoint records no choice)" in health_text(report)
    assert report.to_dict()["writers"]["source"] == "spec"
    auto = run([with_writers(sample(0, [part(100, 100, 3)]), None, Writers.AUTO)])
    assert "Writers: driver rules: the spec says auto and the checkpoint records no choice yet" in health_text(auto)


def test_the_newest_sample_tells_the_writer() -> None:
    # The job restarted between the samples and recorded its choice.
    older = with_writers(sample(0, [part(100, 100, 3)]), None, Writers.AUTO)
    newer = with_writers(sample(5, [part(100, 100, 3)]), RECORDED, Writers.AUTO)
    assert run([older, newer]).writers == newer.writers


def test_a_sample_without_the_writer_reads_back_and_says_not_read() -> None:
    plain = sample(0, [part(100, 100, 3)])
    assert plain.writers is None
    # The trigger carries samples as JSON between polls, old ones included.
    assert HealthSample.model_validate(json.loads(json.dumps(plain.to_dict()))) == plain
    recorded = with_writers(plain, RECORDED, Writers.AUTO)
    assert HealthSample.model_validate(json.loads(json.dumps(recorded.to_dict()))) == recorded
    assert "Writers: not read" in health_text(run([plain]))
