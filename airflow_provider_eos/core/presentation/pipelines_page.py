"""The "Exactly-once pipelines" page: :class:`~.pipelines_overview.PipelineRow`\\ s as one HTML table.

Pure and self-contained (inline style and script) so Airflow's UI can show it in its frame. Every
value is escaped. Airflow shows the page in a sandboxed frame that may not navigate the window, so
a link to one of Airflow's own pages (``data-airflow``) asks Airflow's single-page app to open it
(:data:`OPEN_IN_AIRFLOW`); opened on its own, the page's links are plain links. The recovery form
opens in the same frame. Rows and cells carry ``data-pipeline`` / ``data-column`` attributes: the
page's tests (and a user's own scraping) find a value by what it is, not by its position.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from html import escape

from airflow_provider_eos.core.presentation.pipelines_overview import PipelineRow, RunLink
from airflow_provider_eos.core.transactions.admin_reports import format_age

__all__ = ["COLUMNS", "OPEN_IN_AIRFLOW", "render_pipelines_page"]

#: Script: a click on ``a[data-airflow]`` in Airflow's frame navigates Airflow's app (same origin: its
#: router follows the history entry it is given), not the frame; ``eosOpenInAirflow(path)`` does the same.
OPEN_IN_AIRFLOW = """
function eosOpenInAirflow(path) {
  let app = null;
  try { app = window.parent !== window && window.parent.location.origin === location.origin ? window.parent : null; }
  catch (error) { app = null; }
  if (!app) { window.location.href = path; return; }
  app.history.pushState(null, '', path);
  app.dispatchEvent(new PopStateEvent('popstate', {state: null}));
}
document.addEventListener('click', (event) => {
  const link = event.target.closest('a[data-airflow]');
  if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
  event.preventDefault();
  eosOpenInAirflow(link.getAttribute('href'));
});
"""

#: ``(data-column, heading)`` in page order.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("pipeline", "Pipeline"),
    ("writer", "Writer"),
    ("status", "Health"),
    ("last_committed", "Last committed batch"),
    ("verdict", "Verdict"),
    ("lag", "Lag (records)"),
    ("commit_age", "Commit age"),
    ("transactions", "Open / lingering transactions"),
    ("health_run", "Latest health check"),
    ("recovery_runs", "Latest recovery runs"),
    ("pipeline_runs", "Latest pipeline runs"),
    ("recover", "Recover"),
)

_STYLE = """
body { font-family: system-ui, sans-serif; font-size: 14px; margin: 16px; color: #1a202c; }
h1 { font-size: 20px; margin: 0 0 4px; }
p.lead { color: #4a5568; margin: 0 0 12px; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #e2e8f0; padding: 6px 8px; text-align: left; vertical-align: top; }
th { background: #f7fafc; font-weight: 600; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
.status { border-radius: 4px; padding: 1px 6px; font-weight: 600; }
.HEALTHY, .IN_SYNC, .KAFKA_AHEAD_SAFE, .success { color: #22543d; background: #c6f6d5; }
.DEGRADED, .KAFKA_BEHIND, .running, .queued { color: #744210; background: #fefcbf; }
.UNHEALTHY, .NO_MARKER, .DIVERGED, .failed { color: #742a2a; background: #fed7d7; }
.note { color: #718096; font-size: 12px; }
ul.runs { list-style: none; margin: 0; padding: 0; }
"""


def _time(iso: str | None) -> str:
    """``2026-11-28 09:41:17 UTC`` of an ISO 8601 time (the rows keep ISO; a person reads this)."""
    if iso is None:
        return ""
    try:
        moment = dt.datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _status(value: str | None) -> str:
    if value is None:
        return ""
    return f'<span class="status {escape(value)}">{escape(value)}</span>'


def _run(run: RunLink) -> str:
    label = f"{escape(run.label)} " if run.label else ""
    state = _status(run.state) if run.state else ""
    when = escape(_time(run.when) or "not started")
    return f'{label}<a href="{escape(run.path)}" data-airflow>{when}</a> {state}'


def _runs(runs: Sequence[RunLink]) -> str:
    if not runs:
        return ""
    return '<ul class="runs">' + "".join(f"<li>{_run(run)}</li>" for run in runs) + "</ul>"


def _number(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def _cells(row: PipelineRow) -> dict[str, str]:
    transactions = ("" if row.open_transactions is None
                    else f"{row.open_transactions} / {row.lingering_transactions or 0}")
    status = _status(row.status)
    if row.note:
        status += f'<div class="note">{escape(row.note)}</div>'
    elif row.evaluated_at:
        status += f'<div class="note">as of {escape(_time(row.evaluated_at))}</div>'
    return {
        # The pipeline's own DAG (eos_pipeline__<name>): its runs and its trigger button, in Airflow's app.
        "pipeline": (f'<a href="{escape(row.dag_path)}" data-airflow><strong>{escape(row.pipeline)}</strong></a>'
                     if row.dag_path else f"<strong>{escape(row.pipeline)}</strong>"),
        "writer": escape(row.writer),
        "status": status,
        "last_committed": _number(row.last_committed),
        "verdict": _status(row.verdict),
        "lag": _number(row.lag),
        "commit_age": escape(format_age(row.commit_age_ms) or ""),
        "transactions": transactions,
        "health_run": _run(row.health_run) if row.health_run else "",
        "recovery_runs": _runs(row.recovery_runs),
        "pipeline_runs": _runs(row.pipeline_runs),
        "recover": f'<a href="{escape(row.recovery_form_path)}">Open the recovery form</a>',
    }


_NUMERIC = {"last_committed", "lag", "commit_age", "transactions"}


def render_pipelines_page(rows: Sequence[PipelineRow], *, empty: str) -> str:
    """The whole page.

    :param rows: the pipelines the user may see.
    :param empty: what the page says when there are none (it differs for a user who may see no DAG).
    """
    head = "".join(f'<th data-column="{key}">{escape(title)}</th>' for key, title in COLUMNS)
    if rows:
        body = "".join(
            f'<tr data-pipeline="{escape(row.pipeline)}">'
            + "".join(f'<td data-column="{key}"{" class=number" if key in _NUMERIC else ""}>{cells[key]}</td>'
                      for key, _ in COLUMNS)
            + "</tr>"
            for row, cells in ((row, _cells(row)) for row in rows)
        )
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    else:
        table = f'<p class="empty" data-empty="true">{escape(empty)}</p>'
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<title>Exactly-once pipelines</title>"
        f"<style>{_STYLE}</style></head><body>"
        "<h1>Exactly-once pipelines</h1>"
        '<p class="lead">Each pipeline as its latest health check saw it, with its latest recovery and '
        "pipeline runs. Read-only: recovery starts from its form, in dry-run unless you say otherwise.</p>"
        f"{table}<script>{OPEN_IN_AIRFLOW}</script></body></html>"
    )
