"""The "Exactly-once pipelines" view in Airflow's UI: an Airflow 3 plugin with a FastAPI app and a nav entry.

Every Airflow component loads plugins, a task's process too, so this module stays light: the FastAPI
app (and with it the api-server's auth and database modules) is built on the first request the
api-server routes to it (:class:`LazyApp`), never where a task merely loads plugins.

- ``/eos/pipelines``: the page (:mod:`~airflow_provider_eos.core.presentation.pipelines_page`), in
  the UI under Browse, "Exactly-once pipelines";
- ``/eos/api/pipelines``: the same rows as JSON;
- ``/eos/recover?pipeline=...&action=...``: the manual-recovery trigger form, pre-filled
  (:mod:`~airflow_provider_eos.core.presentation.recovery_form`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow.providers.common.compat.sdk import AirflowPlugin

from airflow_provider_eos.core.presentation.pipelines_overview import PIPELINES_PAGE, VIEW_PREFIX

__all__ = ["EosPipelinesPlugin", "LazyApp"]

Scope = dict[str, Any]


class LazyApp:
    """An ASGI app that builds the real one on its first call (``build`` imports what it needs)."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._app: Any = None

    async def __call__(self, scope: Scope, receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if self._app is None:
            self._app = self._build()
        await self._app(scope, receive, send)


def _build_app() -> Any:
    from airflow_provider_eos.plugins.pipelines_app import pipelines_app

    return pipelines_app()


class EosPipelinesPlugin(AirflowPlugin):
    """Adds the "Exactly-once pipelines" page to the api-server and to the UI's Browse menu."""

    name = "eos_pipelines"
    fastapi_apps = [{"app": LazyApp(_build_app), "url_prefix": VIEW_PREFIX, "name": "Exactly-once pipelines"}]
    external_views = [{
        "name": "Exactly-once pipelines",
        "href": f"{VIEW_PREFIX}{PIPELINES_PAGE}",
        "destination": "nav",
        "category": "browse",
        "url_route": "eos-pipelines",
    }]
