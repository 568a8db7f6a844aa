"""The "Exactly-once pipelines" view's pure parts: rows, the page, the pre-filled recovery form, the plugin's shape."""

from __future__ import annotations

import asyncio
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from airflow_provider_eos.core.dag_ids import HEALTH_DAG_ID, RECOVERY_DAG_ID, pipeline_dag_id
from airflow_provider_eos.core.presentation.pipelines_overview import (
    RunLink,
    dag_path,
    dag_run_path,
    mapped_task_path,
    pipeline_rows,
    recovery_form_path,
    recovery_run_label,
    visible_pipelines,
)
from airflow_provider_eos.core.presentation.pipelines_page import COLUMNS, render_pipelines_page
from airflow_provider_eos.core.presentation.recovery_form import FormParam, filled_value, render_recovery_form
from tests.support.health_samples import PREFIX, part, run, sample, txn


class _Cells(HTMLParser):
    """``{pipeline: {data-column: text}}`` of a rendered page, and every link's ``(href, opens in Airflow)``."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, str]] = {}
        self.links: list[tuple[str, bool]] = []
        self._row: str | None = None
        self._column: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "tr" and "data-pipeline" in found:
            self._row = found["data-pipeline"]
            self.rows[self._row] = {}
        elif tag == "td" and self._row:
            self._column = found["data-column"]
            self.rows[self._row][self._column] = ""
        elif tag == "a":
            self.links.append((found["href"] or "", "data-airflow" in found))

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._column = None

    def handle_data(self, data: str) -> None:
        if self._row and self._column:
            self.rows[self._row][self._column] += data


def _parsed(html: str) -> _Cells:
    cells = _Cells()
    cells.feed(html)
    return cells


def _report(name: str = "orders"):
    samples = [sample(t, [part(100, 60, 3)], commit_s=0, transactions=[txn(f"{PREFIX}-0", 30, at_s=t)])
               for t in (0, 5)]
    return run(samples).model_copy(update={"pipeline": name})


HEALTH_TASK = RunLink(dag_id=HEALTH_DAG_ID, run_id="scheduled__1", state="failed", when="2026-11-28T09:00:00+00:00",
                      path=mapped_task_path("", HEALTH_DAG_ID, "scheduled__1", "health_report", 0))
RECOVERY = RunLink(dag_id=RECOVERY_DAG_ID, run_id="manual__2", state="success", when="2026-11-28T09:05:00+00:00",
                   path=dag_run_path("", RECOVERY_DAG_ID, "manual__2"), label="verify")


def test_a_row_joins_the_latest_report_with_the_runs_and_links_the_prefilled_form() -> None:
    report = _report()
    (row, never) = pipeline_rows({"orders": "auto", "payments": "driver"}, {"orders": (report, HEALTH_TASK)},
                                 {"orders": [RECOVERY]}, {}, base_path="/airflow/")
    assert row.pipeline == "orders" and row.status == report.status.value == "UNHEALTHY"
    assert row.last_committed == 0 and row.verdict == "IN_SYNC" and row.lag == 40
    assert row.commit_age_ms == report.commit_age_ms and row.open_transactions == 1
    assert row.lingering_transactions == 1  # open 30 s, the limit is 10 s
    assert row.writer == "auto (spec)"  # the report read no writer from a checkpoint
    assert row.health_run == HEALTH_TASK and row.recovery_runs == (RECOVERY,)
    assert row.recovery_form_path == "/airflow/eos/recover?pipeline=orders&action=verify"
    assert never.pipeline == "payments" and never.status is None and never.note == "no health report yet"
    assert never.writer == "driver (spec)" and never.recovery_form_path.endswith("pipeline=payments&action=verify")


def test_an_unreadable_report_says_so_beside_its_task() -> None:
    (row,) = pipeline_rows({"orders": "executors"}, {"orders": (None, HEALTH_TASK)}, {}, {}, base_path="")
    assert row.status is None and row.health_run == HEALTH_TASK
    assert row.note == "the latest health report could not be read"


def test_ui_paths_quote_run_ids_and_keep_the_base_path() -> None:
    assert dag_run_path("/x/", "d", "manual__2026-11-28T09:00:00+00:00") == \
        "/x/dags/d/runs/manual__2026-11-28T09%3A00%3A00%2B00%3A00"
    assert mapped_task_path("", "d", "r", "t", 3) == "/dags/d/runs/r/tasks/t/mapped/3"
    assert recovery_form_path("", "a b&c") == "/eos/recover?pipeline=a+b%26c&action=verify"


@pytest.mark.parametrize(("readable", "seen"), [
    (set(), []),
    ({"some_other_dag"}, []),
    ({HEALTH_DAG_ID}, ["a", "b"]),
    ({RECOVERY_DAG_ID}, ["a", "b"]),
    ({"eos_pipeline"}, []),  # the one DAG every pipeline shared before: no pipeline's own DAG
    # A pipeline's own DAG names only its pipeline: who may read some of them sees those.
    ({pipeline_dag_id("b")}, ["b"]),
    ({pipeline_dag_id("a"), pipeline_dag_id("b"), pipeline_dag_id("gone")}, ["a", "b"]),
])
def test_only_a_user_who_may_read_a_pipelines_dag_sees_pipelines(readable: set[str], seen: list[str]) -> None:
    assert visible_pipelines(["b", "a"], readable) == seen


def test_a_row_links_its_pipelines_own_dag_and_its_runs_there_only_if_the_user_may_read_it() -> None:
    own = RunLink(dag_id=pipeline_dag_id("orders"), run_id="manual__3", state="running",
                  when="2026-11-28T09:10:00+00:00", path=dag_run_path("/af", pipeline_dag_id("orders"), "manual__3"))
    orders, payments = pipeline_rows({"orders": "auto", "payments": "auto"}, {}, {}, {"orders": [own]},
                                     base_path="/af", readable_dags={HEALTH_DAG_ID, pipeline_dag_id("orders")})
    assert orders.dag_path == "/af/dags/eos_pipeline__orders" == dag_path("/af", "eos_pipeline__orders")
    assert orders.pipeline_runs == (own,) and own.path == "/af/dags/eos_pipeline__orders/runs/manual__3"
    assert payments.dag_path is None and payments.pipeline_runs == ()
    page = _parsed(render_pipelines_page([orders, payments], empty="none"))
    assert (orders.dag_path, True) in page.links and (own.path, True) in page.links  # opened in Airflow's app
    assert page.rows["payments"]["pipeline"] == "payments" and page.rows["orders"]["pipeline"] == "orders"


@pytest.mark.parametrize(("conf", "label"), [
    ({"action": "verify", "dry_run": True}, "verify"),
    ({"action": "abort"}, "abort (dry run)"),  # the DAG's default is a dry run
    ({"action": "abort", "dry_run": None}, "abort (dry run)"),
    ({"action": "align", "dry_run": False}, "align"),
    ({}, ""),
])
def test_a_recovery_run_says_its_action_and_whether_it_only_planned(conf: dict, label: str) -> None:
    assert recovery_run_label(conf) == label


def test_the_page_shows_every_column_escaped_and_opens_airflows_pages_in_airflow() -> None:
    report = _report("<orders>")
    rows = pipeline_rows({"<orders>": "auto"}, {"<orders>": (report, HEALTH_TASK)}, {"<orders>": [RECOVERY]}, {},
                         base_path="")
    html = render_pipelines_page(rows, empty="none")
    assert "<orders>" not in html and "&lt;orders&gt;" in html
    page = _parsed(html)
    cells = page.rows["<orders>"]
    assert list(cells) == [key for key, _ in COLUMNS]
    assert cells["status"].startswith("UNHEALTHY") and cells["verdict"] == "IN_SYNC"
    assert cells["last_committed"] == "0" and cells["lag"] == "40" and cells["transactions"] == "1 / 1"
    assert cells["commit_age"] == "5s" and cells["writer"] == "auto (spec)"
    assert cells["recovery_runs"] == "verify 2026-11-28 09:05:00 UTC success"
    assert cells["status"].endswith(f"as of {report.evaluated_at[:10]} {report.evaluated_at[11:19]} UTC")
    # Airflow's pages open in Airflow's app; the recovery form opens in the view's frame.
    assert set(page.links) == {(HEALTH_TASK.path, True), (RECOVERY.path, True), (rows[0].recovery_form_path, False)}


def test_an_empty_page_says_why_and_has_no_table() -> None:
    html = render_pipelines_page([], empty="No exactly-once pipelines are visible to you.")
    assert "<table" not in html and 'data-empty="true">No exactly-once pipelines are visible to you.<' in html


# -- the pre-filled recovery form ------------------------------------------------------------------------------


def _recovery_params(tmp_path: Path) -> list[FormParam]:
    """The real manual-recovery DAG's params, for a folder of two pipelines."""
    from airflow_provider_eos.dags.manual_recovery import manual_recovery_dag

    for name in ("orders", "payments"):
        (tmp_path / f"{name}.yaml").write_text(json.dumps({
            "name": name, "kafka": {"bootstrap.servers": "127.0.0.1:9"}, "input_topics": [f"{name}-in"],
            "output_topic": f"{name}-out", "group_id": f"{name}-sink", "transactional_id_prefix": f"{name}-eos",
            "checkpoint_location": str(tmp_path / name),
        }))
    dag = manual_recovery_dag(tmp_path)
    return [FormParam(name=n, value=dag.params.get_param(n).value, schema=dag.params.get_param(n).schema)
            for n in dag.params]


def test_the_form_is_the_recovery_dags_params_with_the_links_values(tmp_path: Path) -> None:
    params = _recovery_params(tmp_path)
    html = render_recovery_form(RECOVERY_DAG_ID, params, {"pipeline": "payments", "action": "verify"}, base_path="")
    assert [p.name for p in params][:3] == ["pipeline", "action", "dry_run"]
    assert '<option value="payments" selected>' in html and '<option value="orders">' in html
    assert '<option value="verify" selected>' in html
    assert 'name="dry_run" id="param_dry_run" data-type="boolean" data-nullable="true" checked' in html
    assert 'name="confirmation" id="param_confirmation" data-type="string" data-nullable="true" value=""' in html
    # A null choice is the empty option (sent as null), never the string "None" the param's enum refuses.
    in_flight = html.split('id="param_in_flight_batch"', 1)[1].split("</select>", 1)[0]
    assert '<option value="" selected></option>' in in_flight and "None" not in in_flight, in_flight
    assert '<option value="written">written</option>' in in_flight
    assert f'data-api="/api/v2/dags/{RECOVERY_DAG_ID}/dagRuns"' in html
    assert f'data-runs="/dags/{RECOVERY_DAG_ID}/runs/"' in html


def test_a_link_never_preselects_what_the_form_would_refuse(tmp_path: Path) -> None:
    by_name = {p.name: p for p in _recovery_params(tmp_path)}
    assert filled_value(by_name["pipeline"], "not-a-pipeline") == by_name["pipeline"].value
    assert filled_value(by_name["action"], "abort") == "abort"
    assert filled_value(by_name["dry_run"], "false") is False
    assert filled_value(by_name["dry_run"], "maybe") is True
    assert filled_value(by_name["target_batch"], "12") == 12
    assert filled_value(by_name["target_batch"], "twelve") is None
    assert filled_value(by_name["confirmation"], None) is None


# -- the plugin ---------------------------------------------------------------------------------------------------


def test_the_plugin_declares_a_nav_view_airflow_accepts_and_builds_its_app_once() -> None:
    from airflow.api_fastapi.core_api.datamodels.plugins import ExternalViewResponse, FastAPIAppResponse

    from airflow_provider_eos.plugins.pipelines_view import EosPipelinesPlugin, LazyApp

    (view,) = EosPipelinesPlugin.external_views
    assert ExternalViewResponse.model_validate(view).href == "/eos/pipelines"
    (app,) = EosPipelinesPlugin.fastapi_apps
    assert FastAPIAppResponse.model_validate({**app, "app": "x"}).url_prefix == "/eos"

    built: list[int] = []
    calls: list[dict] = []

    async def inner(scope, receive, send) -> None:
        calls.append(scope)

    def build():
        built.append(1)
        return inner

    lazy = LazyApp(build)
    assert built == []  # loading the plugin builds nothing
    for _ in range(2):
        asyncio.run(lazy({"type": "http"}, None, None))
    assert built == [1] and len(calls) == 2


def test_the_plugin_is_registered_where_airflow_finds_plugins() -> None:
    from importlib.metadata import entry_points

    (found,) = [e for e in entry_points(group="airflow.plugins") if e.name == "eos_pipelines"]
    assert found.value == "airflow_provider_eos.plugins.pipelines_view:EosPipelinesPlugin"


def test_a_page_asked_for_without_the_users_token_relays_it_from_airflow_31s_storage_and_the_json_stays_401() -> None:
    from fastapi.testclient import TestClient

    from airflow_provider_eos.core.presentation.airflow_token import TOKEN_KEY
    from airflow_provider_eos.plugins.pipelines_app import pipelines_app

    client = TestClient(pipelines_app())
    for page in ("/pipelines", "/recover?pipeline=orders&action=verify"):
        answer = client.get(page)
        assert answer.status_code == 401 and answer.headers["content-type"].startswith("text/html"), page
        # The relay asks for the same page with the token Airflow 3.1's UI stores, and writes the answer.
        assert f"localStorage.getItem('{TOKEN_KEY}')" in answer.text and "eosFetch(location.href, {})" in answer.text
        assert "Authorization: 'Bearer ' + token" in answer.text and "document.write(page)" in answer.text
    answer = client.get("/api/pipelines")
    assert answer.status_code == 401 and answer.json() == {"detail": "Not authenticated"}


def test_the_forms_trigger_retries_with_the_stored_token_only_when_the_cookie_is_refused(tmp_path: Path) -> None:
    html = render_recovery_form(RECOVERY_DAG_ID, _recovery_params(tmp_path), {}, base_path="")
    assert "await eosFetch(form.dataset.api, {" in html and "fetch(form.dataset.api" not in html.replace("eosFetch", "")
    assert "response.status === 401 ? eosStoredToken() : null" in html
