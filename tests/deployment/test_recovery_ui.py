"""The on-call's manual recovery through a real browser, on the shared Airflow deployment.

Chromium (Debian's, driven by Playwright) logs in to the api-server, opens ``eos_manual_recovery``,
fills the trigger form as a person would, triggers, waits on the run's page and reads the
result where Airflow shows it to a person: the task's Rendered Templates tab. The page's DOM text
is asserted; screenshots are saved under ``$EOS_TEST_ARTIFACTS`` (default ``artifacts/``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo
from tests.deployment.conftest import HEALTH_DAG
from tests.support.airflow_api import AirflowApi
from tests.support.browser import Browser, require_chromium
from tests.support.checkpointed_pipeline import LAST_COMMITTED, PARTITIONS, CheckpointedPipeline

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.deployment]
#: The prefix of this module's pipelines (the shared ``pipeline`` fixture, conftest).
PIPELINE_STEM = "ui"

DAG = "eos_manual_recovery"
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("EOS_TEST_ARTIFACTS", REPO / "artifacts")) / "ui"


@pytest.fixture(scope="module")
def browser(airflow_deployment: AirflowDeploymentInfo) -> Iterator[Browser]:
    with Browser(require_chromium(), artifacts=ARTIFACTS) as started:
        started.login(airflow_deployment.url, airflow_deployment.user, airflow_deployment.password())
        yield started



def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


@pytest.mark.long  # CI: the verdict table after the right confirmation below, and in dag.test
def test_verify_from_the_form_shows_the_verdict_table(browser: Browser, pipeline: CheckpointedPipeline,
                                                     airflow_api: AirflowApi) -> None:
    pipeline.commit_group(LAST_COMMITTED)
    name = pipeline.spec.name

    browser.open_trigger_form(DAG)
    browser.fill_recovery_form(pipeline=name, action="verify", dry_run=True, confirmation=None)
    # Nothing typed in Confirmation: the form is valid and Trigger is enabled for a read-only request.
    assert browser.form_problems() == []
    assert browser.trigger_enabled()
    browser.screenshot("verify-form.png")
    run_id = browser.trigger()

    assert browser.wait_for_run_state(DAG, run_id, timeout_s=300) == "success"
    assert browser.task_state(DAG, run_id, "verify") == "success"
    browser.open_task(DAG, run_id, "verify", tab="Rendered Templates")
    card = browser.rendered_field("result")
    browser.screenshot("verify-result.png")
    assert card.splitlines()[0] == f"## verify {name}: OK", card
    ends = pipeline.end_offsets(LAST_COMMITTED)
    for tp, offset in ends.items():
        assert f"| {tp} | {offset} | {offset} | {LAST_COMMITTED} | IN_SYNC |" in _lines(card), card
    assert "Next step: Nothing to do" in card
    # The REST API agrees with the page.
    assert airflow_api.xcom(DAG, run_id, "verify")["overall"] == "IN_SYNC"


def test_a_wrong_confirmation_is_refused_in_the_ui_and_the_right_one_runs(
        browser: Browser, pipeline: CheckpointedPipeline, airflow_api: AirflowApi) -> None:
    name = pipeline.spec.name
    assert set(pipeline.group().values()) == {None}  # NO_MARKER: align would commit offsets/3

    browser.open_trigger_form(DAG)
    browser.fill_recovery_form(pipeline=name, action="align", dry_run=False, confirmation=f"align {name}x")
    browser.screenshot("refused-form.png")
    run_id = browser.trigger()

    # Refused before anything ran: the run is green, nothing changed, the refused task says why.
    assert browser.wait_for_run_state(DAG, run_id, timeout_s=300) == "success"
    assert set(pipeline.group().values()) == {None}
    states = airflow_api.task_states(DAG, run_id)
    assert states["refused"] == "success" and states["align"] == "skipped", states
    browser.open_task(DAG, run_id, "refused", tab="Rendered Templates")
    card = browser.rendered_field("result")
    browser.screenshot("refused-result.png")
    assert card.splitlines()[0] == f"## align {name}: REFUSED", card
    assert f"must read exactly 'align {name}'" in card and f"got 'align {name}x'" in card
    assert "nothing was changed" in card
    browser.open_task(DAG, run_id, "refused", tab="Logs")
    log = browser.page_text()
    assert "Refused, nothing was changed" in log and "Traceback" not in log

    # A dry run needs no confirmation and shows the plan: what align would change, per partition.
    browser.open_trigger_form(DAG)
    browser.fill_recovery_form(pipeline=name, action="align", dry_run=True, confirmation=None)
    run_id = browser.trigger()
    assert browser.wait_for_run_state(DAG, run_id, timeout_s=300) == "success"
    browser.open_task(DAG, run_id, "align", tab="Rendered Templates")
    plan = browser.rendered_field("result")
    browser.screenshot("align-plan.png")
    assert "(dry run: nothing changed)" in plan and f"{PARTITIONS} of {PARTITIONS} partition(s) would change" in plan
    assert set(pipeline.group().values()) == {None}

    pipeline.age_commits()  # the query stopped long ago: the liveness check lets the align commit
    browser.open_trigger_form(DAG)
    browser.fill_recovery_form(pipeline=name, action="align", dry_run=False, confirmation=f"align {name}")
    run_id = browser.trigger()

    assert browser.wait_for_run_state(DAG, run_id, timeout_s=300) == "success"
    assert airflow_api.task_states(DAG, run_id)["align"] == "success"
    groups = pipeline.group()
    assert {tp: offset for tp, (offset, _) in groups.items()} == pipeline.end_offsets(LAST_COMMITTED)
    browser.open_task(DAG, run_id, "align", tab="Rendered Templates")
    card = browser.rendered_field("result")
    browser.screenshot("align-result.png")
    assert card.splitlines()[0] == f"## align {name}: OK", card
    assert "Verification afterwards (read back from Kafka): IN_SYNC" in card
    assert len([row for row in _lines(card) if row.startswith(f"| {pipeline.input_topic}-")]) == PARTITIONS


@pytest.mark.long  # CI: the same card, its lag table and label in dag.test (tests/dags/test_manual_recovery_ui.py)
def test_the_health_check_report_is_a_card_in_the_ui(browser: Browser, pipeline: CheckpointedPipeline,
                                                     airflow_api: AirflowApi) -> None:
    pipeline.produce_input_of(LAST_COMMITTED)
    pipeline.commit_group(LAST_COMMITTED)
    name = pipeline.spec.name
    # No parse to wait for: the run's first task lists the specs folder as the run finds it.
    browser.open_trigger_form(HEALTH_DAG)
    run_id = browser.trigger()
    browser.wait_for_run_state(HEALTH_DAG, run_id, timeout_s=300)

    # One mapped task per pipeline in the folder (other tests' too): ours is labelled with its name.
    (mine,) = [ti for ti in airflow_api.task_instances(HEALTH_DAG, run_id)
               if (ti.get("rendered_map_index") or "").startswith(f"{name}: ")]
    assert mine["state"] == "success", mine
    browser.open_task(HEALTH_DAG, run_id, "health_report", tab="Rendered Templates",
                      map_index=mine["map_index"])
    card = browser.rendered_field("result")
    browser.screenshot("health-result.png")
    assert card.splitlines()[0].startswith(f"## health {name}: OK"), card
    assert "verification: IN_SYNC" in card
    for tp, offset in pipeline.end_offsets(LAST_COMMITTED).items():
        assert any(line.startswith(f"| {tp} | ") and f" {offset} " in line for line in _lines(card)), card
