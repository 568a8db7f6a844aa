"""One health report of one pipeline as a task (the ``eos_health_check`` DAG maps it over the pipelines).

The operator calls the use case ``eos health`` calls (:func:`airflow_provider_eos.usecases.health.health`)
and presents it as :mod:`airflow_provider_eos.operators.use_case` describes: the card (status,
findings worst first, lag by partition, pinned partitions, open transactions) is the task's
``result`` field and opens the log, the full report is logged after it and is the XCom
``return_value``; UNHEALTHY fails the task without retrying, so alerting on task failure alerts
on the pipeline. A mapped task's label (``map_index_template="{{ pipeline_name }}"``) reads
``<pipeline>: <status>`` once the report is in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.presentation import health_card
from airflow_provider_eos.operators.use_case import EosUseCaseOperator, card_budget, heading_of

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_eos.usecases.health import HealthOutcome
    from airflow_provider_eos.usecases.result import UseCaseResult

__all__ = ["PipelineHealthReportOperator"]


class PipelineHealthReportOperator(EosUseCaseOperator):
    """Sample a pipeline ``samples`` times, ``interval_s`` apart, and report its health.

    :param samples: samples to take (the lag trends need several).
    :param interval_s: seconds between samples.
    :param strict: DEGRADED fails the task too (by default only UNHEALTHY does).
    """

    ui_color = "#d6eaf8"

    def __init__(self, *, samples: int = 3, interval_s: float = 10.0, strict: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.samples = samples
        self.interval_s = interval_s
        self.strict = strict

    def execute(self, context: Context) -> dict[str, Any]:
        """Sample, evaluate; return the report, or push it and fail when unhealthy."""
        from airflow_provider_eos.usecases.health import health

        with self.use_case_failures("health"):
            clients = self.pipeline_clients()
            # The mapped task's label (map_index_template) renders from this context after execute.
            context["pipeline_name"] = clients.spec.name  # type: ignore[typeddict-unknown-key]
            outcome = health(clients, samples=self.samples, interval_s=self.interval_s, strict=self.strict)
        context["pipeline_name"] = f"{outcome.pipeline}: {outcome.report.status.value}"  # type: ignore[typeddict-unknown-key]
        return self.present(context, outcome)

    def card(self, result: UseCaseResult[Any], *, max_rows: int | None) -> str:
        """Status, findings, lag by partition worst first, pinned partitions, open transactions."""
        outcome: HealthOutcome = result  # type: ignore[assignment]
        return health_card(heading_of(outcome), outcome.report, max_chars=card_budget())
