"""Results as a person reads them: compact, bounded Markdown cards (no Airflow, no Kafka client).

The operators put a card where Airflow's UI shows a task's result to a person (the task's
``result`` field in the "Rendered Templates" tab) and at the top of the task log; the CLI's text
and the XCom data stay the full reports.
"""

from __future__ import annotations

from airflow_provider_eos.core.presentation.health import health_card
from airflow_provider_eos.core.presentation.markdown import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_ROWS,
    ResultHeading,
    fit,
    md_table,
)
from airflow_provider_eos.core.presentation.recovery import (
    abort_card,
    align_card,
    error_card,
    refusal_card,
    rewind_card,
    text_card,
    verification_card,
)

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_ROWS",
    "ResultHeading",
    "abort_card",
    "align_card",
    "error_card",
    "fit",
    "health_card",
    "md_table",
    "refusal_card",
    "rewind_card",
    "text_card",
    "verification_card",
]
