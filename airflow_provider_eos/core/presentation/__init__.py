"""Every presentation of a result, one module per output form (no Airflow, no Kafka client).

Reports (the core's pydantic models, a use case's result) are data; they never render
themselves. What a person reads is made here:

- :mod:`.text` (with :mod:`.text_checks` and :mod:`.text_recovery`): the terminal and task-log
  text, ``<report>_text(report)`` and :func:`~.text.result_text` (what ``eos`` prints and a task
  logs), its tables drawn by :func:`~.table.render_table`;
- :mod:`.cards`: the compact, bounded Markdown card of a result, ``<result>_card(heading, report)``,
  built with :mod:`.markdown`; the operators put it where Airflow's UI shows a task's result to a
  person (the task's ``result`` field in the "Rendered Templates" tab) and at the top of the task
  log;
- JSON is the data itself: ``to_dict()`` (``model_dump(mode="json")``) of a report and
  ``UseCaseResult.data()``, which the CLI prints with ``--json`` and the operators return as XCom.
"""

from __future__ import annotations

from airflow_provider_eos.core.presentation.cards import (
    abort_card,
    align_card,
    error_card,
    health_card,
    refusal_card,
    rewind_card,
    text_card,
    verification_card,
)
from airflow_provider_eos.core.presentation.markdown import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_ROWS,
    ResultHeading,
    fit,
    md_table,
)
from airflow_provider_eos.core.presentation.table import format_cell, render_table
from airflow_provider_eos.core.presentation.text import report_text, result_text
from airflow_provider_eos.core.presentation.text_checks import (
    acls_summary,
    acls_text,
    health_text,
    preflight_summary,
    preflight_text,
    verification_text,
)
from airflow_provider_eos.core.presentation.text_recovery import (
    abort_text,
    align_plan_text,
    align_text,
    rewind_plan_text,
    rewind_text,
)

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_ROWS",
    "ResultHeading",
    "abort_card",
    "abort_text",
    "acls_summary",
    "acls_text",
    "align_card",
    "align_plan_text",
    "align_text",
    "error_card",
    "fit",
    "format_cell",
    "health_card",
    "health_text",
    "md_table",
    "preflight_summary",
    "preflight_text",
    "refusal_card",
    "render_table",
    "report_text",
    "result_text",
    "rewind_card",
    "rewind_plan_text",
    "rewind_text",
    "text_card",
    "verification_card",
    "verification_text",
]
