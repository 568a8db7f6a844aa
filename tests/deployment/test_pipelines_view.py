"""The "Exactly-once pipelines" view in the real Airflow UI, driven in Chromium on the shared deployment.

A checkpointed pipeline is checked by the health check and verified by a manual recovery run
(both through the REST API); then the admin opens the view from Airflow's Browse menu, reads the
pipeline's row in the DOM, follows "Open the recovery form" to the pre-filled form and triggers it;
the run it starts is the pipeline's verify, dry run, and Airflow's app shows it. A viewer may read
the view but Airflow refuses them the run; a user who may read no DAG sees no pipeline. The view's
screenshot is saved under ``$EOS_TEST_ARTIFACTS/ui`` (docs/airflow-pipelines-view.png is `make screenshots`' own).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx
import pytest

from airflow_provider_eos.devstack.airflow_settings import GUEST_USER, VIEWER_USER, AirflowDeploymentInfo
from tests.deployment.conftest import HEALTH_DAG, RECOVERY_DAG, check_caught_up_pipeline
from tests.support.airflow_api import AirflowApi
from tests.support.browser import Browser, require_chromium
from tests.support.checkpointed_pipeline import LAST_COMMITTED, CheckpointedPipeline

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.deployment]
#: The prefix of this module's pipelines (the shared ``pipeline`` fixture, conftest).
PIPELINE_STEM = "view"

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("EOS_TEST_ARTIFACTS", REPO / "artifacts")) / "ui"



@pytest.fixture
def browser() -> Iterator[Browser]:
    with Browser(require_chromium(), artifacts=ARTIFACTS) as started:
        yield started


def _view_rows(browser: Browser) -> dict[str, dict[str, str]]:
    """``{pipeline: {column: text}}`` of the view's frame inside Airflow's page."""
    frame = browser.page.frame_locator("iframe").first
    frame.locator("h1").wait_for()
    return frame.locator("tr[data-pipeline]").evaluate_all(
        """rows => Object.fromEntries(rows.map(row => [row.dataset.pipeline, Object.fromEntries(
            [...row.querySelectorAll('td')].map(td => [td.dataset.column, td.innerText.trim()]))]))""")


def _token(deployment: AirflowDeploymentInfo, user: str) -> str:
    answer = httpx.post(f"{deployment.url}/auth/token", json={"username": user, "password": deployment.password(user)})
    answer.raise_for_status()
    return answer.json()["access_token"]


def _rows_as(deployment: AirflowDeploymentInfo, user: str | None) -> Any:
    headers = {"Authorization": f"Bearer {_token(deployment, user)}"} if user else {}
    return httpx.get(f"{deployment.url}/eos/api/pipelines", headers=headers)


def test_the_view_shows_the_pipeline_and_opens_its_recovery_form_prefilled(
        browser: Browser, pipeline: CheckpointedPipeline, airflow_deployment: AirflowDeploymentInfo,
        airflow_api: AirflowApi) -> None:
    health_run, recoveries = check_caught_up_pipeline(pipeline, airflow_api, "verify")
    name, verify_run = pipeline.spec.name, recoveries["verify"]

    # The admin, from Airflow's own menu entry (the plugin's external view, in Airflow's frame).
    browser.login(airflow_deployment.url, airflow_deployment.user, airflow_deployment.password())
    browser.goto("/plugin/eos-pipelines")
    row = _view_rows(browser)[name]
    browser.screenshot("pipelines-view.png", whole_dialog=False)
    assert row["status"].startswith("HEALTHY"), row
    assert row["last_committed"] == str(LAST_COMMITTED) and row["verdict"] == "IN_SYNC", row
    assert row["lag"] == "0" and row["transactions"] == "0 / 0", row
    assert row["writer"] in ("driver", "executors", "auto (spec)"), row
    assert row["commit_age"], row
    assert row["recovery_runs"].startswith("verify") and "success" in row["recovery_runs"], row
    frame = browser.page.frame_locator("iframe").first
    mine = frame.locator(f'tr[data-pipeline="{name}"]')
    assert f"/dags/{HEALTH_DAG}/runs/{quote(health_run, safe='')}/tasks/health_report/mapped/" in \
        mine.locator('td[data-column="health_run"] a').get_attribute("href")
    assert f"/dags/{RECOVERY_DAG}/runs/{quote(verify_run, safe='')}" == \
        mine.locator('td[data-column="recovery_runs"] a').first.get_attribute("href")

    # A run's link opens the run in Airflow's app (the frame may not navigate the window itself).
    mine.locator('td[data-column="health_run"] a').click()
    browser.page.wait_for_url(lambda url: f"/dags/{HEALTH_DAG}/runs/{quote(health_run, safe='')}/tasks/" in url)
    browser.goto("/plugin/eos-pipelines")
    mine = browser.page.frame_locator("iframe").first.locator(f'tr[data-pipeline="{name}"]')

    # "Open the recovery form": the pre-filled form opens in the view's frame; its Trigger starts the run,
    # and Airflow's app opens the run's page.
    mine.locator('td[data-column="recover"] a').click()
    form = browser.page.frame_locator("iframe").first
    assert form.locator("#param_pipeline").input_value() == name
    assert form.locator("#param_action").input_value() == "verify"
    assert form.locator("#param_dry_run").is_checked()
    assert [f.url for f in browser.page.frames if f.url.startswith(f"{airflow_deployment.url}/eos/recover?")]
    browser.screenshot("pipelines-view-recovery-form.png", whole_dialog=False)
    form.get_by_role("button", name="Trigger").click()
    browser.page.wait_for_url(lambda url: f"/dags/{RECOVERY_DAG}/runs/" in url)
    run_id = unquote(browser.page.url.split("/runs/", 1)[1].split("/", 1)[0])
    assert airflow_api.run(RECOVERY_DAG, run_id)["conf"] == {
        "pipeline": name, "action": "verify", "dry_run": True, "target_batch": None, "force": False,
        "expected_plan": None, "in_flight_batch": None, "confirmation": None,
    }
    assert airflow_api.wait_for_run(RECOVERY_DAG, run_id, timeout_s=300) == "success"

    # A viewer reads the view, and Airflow refuses them the run the form would start.
    browser.reset()
    browser.login(airflow_deployment.url, VIEWER_USER, airflow_deployment.password(VIEWER_USER))
    browser.goto(f"/eos/recover?pipeline={name}&action=verify")
    browser.page.get_by_role("button", name="Trigger").click()
    refusal = browser.page.get_by_role("alert")
    refusal.filter(has_text="Airflow refused the run").wait_for()
    assert "HTTP 403" in refusal.inner_text()
    assert [r["pipeline"] for r in _rows_as(airflow_deployment, VIEWER_USER).json() if r["pipeline"] == name]

    # A user who may read no DAG sees no pipeline, in the page and in its JSON; nobody signed in, nothing.
    browser.reset()
    browser.login(airflow_deployment.url, GUEST_USER, airflow_deployment.password(GUEST_USER))
    browser.goto("/eos/pipelines")
    assert browser.page.locator("tr[data-pipeline]").count() == 0
    assert browser.page.locator("[data-empty]").inner_text() == "No exactly-once pipelines are visible to you."
    assert _rows_as(airflow_deployment, GUEST_USER).json() == []
    assert _rows_as(airflow_deployment, None).status_code == 401
