"""The manual-recovery trigger form, pre-filled: what the pipelines view's "Recover" link opens.

Airflow 3's UI cannot pre-fill a DAG's trigger form from a link (Airflow 2's could), so the view
serves this page: the recovery DAG's own params (their defaults, types, enums, titles and help, as
the deployment parsed them) as one form, with the values the link carries filled in. Its Trigger
button posts the run to Airflow's REST API as the signed-in user, so Airflow decides who may
trigger it and the recovery DAG's own ``validate_request`` task judges the request, exactly as from the
DAG's form; the page then opens the new run in Airflow. Pure: the plugin hands in the params.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from pydantic import Field

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.presentation.airflow_token import AUTH_FETCH
from airflow_provider_eos.core.presentation.pipelines_page import OPEN_IN_AIRFLOW

__all__ = ["FormParam", "filled_value", "render_recovery_form"]


class FormParam(FrozenModel):
    """One of the DAG's params: its name, default and JSON schema (``type``, ``enum``, ``title``, ...)."""

    name: str
    value: Any = None
    schema_: dict[str, Any] = Field(default_factory=dict, alias="schema")


def _types(param: FormParam) -> set[str]:
    kind = param.schema_.get("type", "string")
    return set(kind) if isinstance(kind, list) else {kind}


def filled_value(param: FormParam, given: str | None) -> Any:
    """The field's initial value: ``given`` (from the link) where it fits the param, else the default.

    A value outside the param's ``enum`` or not of its type falls back to the default: a link never
    pre-selects what the form itself would refuse.
    """
    if given is None:
        return param.value
    enum = param.schema_.get("enum")
    types = _types(param)
    if enum is not None:
        return given if given in enum else param.value
    if "boolean" in types:
        return {"true": True, "false": False}.get(given.lower(), param.value)
    if "integer" in types:
        return int(given) if re.fullmatch(r"-?\d+", given) else param.value
    return given


def _help(param: FormParam) -> str:
    text = param.schema_.get("description_md") or param.schema_.get("description") or ""
    return escape(re.sub(r"[*`]", "", str(text))).replace("\n", "<br>")


def _option(choice: Any) -> str:
    return "" if choice is None else escape(str(choice))


def _field(param: FormParam, value: Any) -> str:
    name = escape(param.name)
    types = _types(param)
    nullable = "null" in types
    kind = next((t for t in ("boolean", "integer", "string") if t in types), "string")
    attrs = f'name="{name}" id="param_{name}" data-type="{kind}" data-nullable="{str(nullable).lower()}"'
    enum = param.schema_.get("enum")
    if enum is not None:
        # A null choice is the empty option, which the script sends as null: "None" would be a string the
        # param's enum refuses, and Airflow would refuse the run.
        options = "".join(f'<option value="{_option(o)}"{" selected" if o == value else ""}>{_option(o)}'
                          "</option>" for o in enum)
        return f"<select {attrs}>{options}</select>"
    if kind == "boolean":
        return f'<input type="checkbox" {attrs}{" checked" if value else ""}>'
    shown = "" if value is None else escape(str(value))
    html_type = "number" if kind == "integer" else "text"
    return f'<input type="{html_type}" {attrs} value="{shown}" autocomplete="off">'


_SCRIPT = """
const form = document.getElementById('recovery-form');
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const conf = {};
  for (const field of form.querySelectorAll('[data-type]')) {
    const kind = field.dataset.type, nullable = field.dataset.nullable === 'true';
    if (kind === 'boolean') { conf[field.name] = field.checked; continue; }
    const text = field.value.trim();
    if (text === '' && nullable) { conf[field.name] = null; continue; }
    conf[field.name] = kind === 'integer' ? Number(text) : text;
  }
  const problem = document.getElementById('problem');
  problem.textContent = '';
  const response = await eosFetch(form.dataset.api, {
    method: 'POST', headers: {'content-type': 'application/json'},
    body: JSON.stringify({logical_date: null, conf: conf}),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const detail = typeof body.detail === 'string' ? body.detail : JSON.stringify(body.detail ?? body);
    problem.textContent = `Airflow refused the run (HTTP ${response.status}): ${detail}`;
    return;
  }
  eosOpenInAirflow(form.dataset.runs + encodeURIComponent(body.dag_run_id));
});
"""


def render_recovery_form(dag_id: str, params: Sequence[FormParam], given: Mapping[str, str], *,
                         base_path: str) -> str:
    """The page: one field per param, filled from ``given`` (the link's query) over the defaults.

    :param dag_id: the recovery DAG.
    :param params: its params, in the DAG's order.
    :param given: the values the link carries (``pipeline``, ``action``, ...).
    :param base_path: the Airflow UI's path prefix.
    """
    root = base_path.rstrip("/")
    rows = "".join(
        f'<tr><th><label for="param_{escape(p.name)}">{escape(str(p.schema_.get("title") or p.name))}</label></th>'
        f"<td>{_field(p, filled_value(p, given.get(p.name)))}"
        f'<div class="help">{_help(p)}</div></td></tr>'
        for p in params
    )
    api = f"{root}/api/v2/dags/{escape(dag_id)}/dagRuns"
    runs = f"{root}/dags/{escape(dag_id)}/runs/"
    filled = escape(json.dumps({k: v for k, v in given.items() if any(p.name == k for p in params)}))
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Manual recovery</title><style>"
        "body{font-family:system-ui,sans-serif;font-size:14px;margin:16px;color:#1a202c}"
        "th{text-align:left;vertical-align:top;padding:6px 12px 6px 0;white-space:nowrap}"
        "td{padding:6px 0}.help{color:#4a5568;font-size:12px;max-width:640px}"
        "#problem{color:#742a2a;font-weight:600;margin:8px 0}button{font-size:14px;padding:6px 16px}"
        "</style></head><body>"
        f"<h1>Trigger {escape(dag_id)}</h1>"
        f'<p>Pre-filled from the pipelines view ({filled}). The run is checked by the DAG\'s <code>validate</code> '
        "task like any other: dry runs and verify need no confirmation.</p>"
        f'<form id="recovery-form" data-api="{api}" data-runs="{runs}"><table>{rows}</table>'
        '<div id="problem" role="alert"></div><button type="submit">Trigger</button></form>'
        f"<script>{OPEN_IN_AIRFLOW}{AUTH_FETCH}{_SCRIPT}</script></body></html>"
    )
