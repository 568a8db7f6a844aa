"""The FastAPI app behind the "Exactly-once pipelines" view (built lazily by :mod:`.pipelines_view`).

Authentication and authorisation are Airflow's: the user comes from the api-server's JWT (the UI's
cookie or a bearer token), and the view shows pipelines only to a user who may read one of the
pipelines' DAGs (:func:`~airflow_provider_eos.core.presentation.pipelines_overview.visible_pipelines`);
of each DAG's runs (the health check's, the recovery's, each pipeline's own ``eos_pipeline__<name>``), it
reads only those of DAGs the user may read.
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import urlsplit

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.common.db.common import SessionDep
from airflow.api_fastapi.core_api.security import GetUserDep
from airflow.configuration import conf
from fastapi import FastAPI, HTTPException, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import HTMLResponse, Response

from airflow_provider_eos.core.dag_ids import HEALTH_DAG_ID, RECOVERY_DAG_ID, pipeline_dag_id
from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.presentation.airflow_token import render_token_relay
from airflow_provider_eos.core.presentation.pipelines_overview import (
    PIPELINES_PAGE,
    RECOVERY_FORM_PAGE,
    PipelineRow,
    may_see_pipelines,
    pipeline_rows,
    recovery_run_label,
    visible_pipelines,
)
from airflow_provider_eos.core.presentation.pipelines_page import render_pipelines_page
from airflow_provider_eos.core.presentation.recovery_form import FormParam, render_recovery_form
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.plugins.pipelines_records import (
    latest_health_reports,
    runs_by_pipeline,
    runs_of_pipeline_dags,
)
from airflow_provider_eos.spec_registry import discover, specs_directory

__all__ = ["pipelines_app"]

log = logging.getLogger(__name__)


def _base_path() -> str:
    return urlsplit(conf.get("api", "base_url", fallback="") or "").path.rstrip("/")


def _writers_of(specs: dict[str, Path], names: list[str]) -> dict[str, str]:
    writers = {}
    for name in names:
        try:
            writers[name] = PipelineSpec.load(specs[name]).writers.value
        except SpecError as err:  # changed since it was discovered: the row says so, the page still shows
            log.warning("EOS-VIEW %s: %s", name, err)
            writers[name] = "unknown"
    return writers


def _rows(user: object, session: SessionDep) -> tuple[list[PipelineRow], bool]:
    """The rows the user may see, and whether they may read any of the pipelines' DAGs."""
    readable = get_auth_manager().get_authorized_dag_ids(user=user, method="GET", session=session)
    dags_folder = Path(conf.get("core", "dags_folder"))
    specs = discover(specs_directory(dags_folder / "pipelines")).specs
    names = visible_pipelines(list(specs), set(readable))
    if not names:
        return [], may_see_pipelines(set(readable))
    base = _base_path()
    reports = latest_health_reports(session, names, base) if HEALTH_DAG_ID in readable else {}
    recoveries = (runs_by_pipeline(session, RECOVERY_DAG_ID, names, base, label=recovery_run_label)
                  if RECOVERY_DAG_ID in readable else {})
    # Each pipeline has a DAG of its own (eos_pipeline__<name>): its runs show where the user may read it.
    runs = runs_of_pipeline_dags(session, [name for name in names if pipeline_dag_id(name) in readable], base)
    return pipeline_rows(_writers_of(specs, names), reports, recoveries, runs, base_path=base,
                         readable_dags=set(readable)), True


def _recovery_params(session: SessionDep) -> list[FormParam]:
    """The recovery DAG's params as the deployment parsed it (``[]``: not parsed yet)."""
    from airflow.models.serialized_dag import SerializedDagModel

    dag = SerializedDagModel.get_dag(RECOVERY_DAG_ID, session=session)
    if dag is None:
        return []
    return [FormParam(name=name, value=dag.params.get_param(name).value, schema=dag.params.get_param(name).schema)
            for name in dag.params]


def pipelines_app() -> FastAPI:
    """The app: the page, its rows as JSON, and the pre-filled recovery form."""
    app = FastAPI(title="Exactly-once pipelines", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get(RECOVERY_FORM_PAGE, response_class=HTMLResponse)
    def recovery_form(request: Request, user: GetUserDep, session: SessionDep) -> HTMLResponse:
        readable = get_auth_manager().get_authorized_dag_ids(user=user, method="GET", session=session)
        params = _recovery_params(session) if RECOVERY_DAG_ID in readable else []
        if not params:
            return HTMLResponse(f"<!doctype html><p>{RECOVERY_DAG_ID} is not visible to you, or not parsed yet.</p>",
                                status_code=404)
        return HTMLResponse(render_recovery_form(RECOVERY_DAG_ID, params, dict(request.query_params),
                                                 base_path=_base_path()))

    @app.get(PIPELINES_PAGE, response_class=HTMLResponse)
    def page(user: GetUserDep, session: SessionDep) -> HTMLResponse:
        rows, may_read = _rows(user, session)
        empty = ("No pipeline specs are configured for this deployment." if may_read
                 else "No exactly-once pipelines are visible to you.")
        return HTMLResponse(render_pipelines_page(rows, empty=empty))

    @app.get("/api/pipelines")
    def rows(user: GetUserDep, session: SessionDep) -> list[dict[str, object]]:
        return [row.to_dict() for row in _rows(user, session)[0]]

    @app.exception_handler(HTTPException)
    async def unauthenticated(request: Request, error: HTTPException) -> Response:
        # A page load carries no header; Airflow 3.1 reads the user only from one (its UI keeps the token
        # in the browser's storage): the relay asks for the page again with it. The JSON keeps its 401.
        if error.status_code == 401 and request.scope.get("endpoint") in (page, recovery_form):
            return HTMLResponse(render_token_relay(), status_code=401)
        return await http_exception_handler(request, error)

    return app
