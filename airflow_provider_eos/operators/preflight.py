"""The pre-flight task (docs/preflight-rules.md): run the rule catalog before a pipeline starts.

The operator calls the use case ``eos preflight`` calls
(:func:`airflow_provider_eos.usecases.preflight.preflight`), logs the report's table, and makes
the report's data the task's XCom ``return_value`` in every outcome. Failed ERROR rules fail
the task without retrying (``AirflowFailException``): a retry cannot change a configuration.
Not reaching the cluster at all fails it with ``AirflowException``, which is retried as
configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.preflight import DEFAULT_LONGEST_EXPECTED_PAUSE_MS
from airflow_provider_eos.operators.use_case import EosUseCaseOperator, task_failures

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["EosPreflightOperator"]


class EosPreflightOperator(EosUseCaseOperator):
    """Check a pipeline's spec, Kafka cluster, topics, sink group and checkpoint before it starts.

    Logs the report (one row per rule, then the fix of each failed rule) and returns its data;
    fails when a rule of severity ERROR fails, after pushing the report, so a downstream task or
    a person can read which codes failed from XCom.

    :param spec_path: the pipeline spec file (YAML or JSON). (templated)
    :param kafka_conn_id: an Airflow ``kafka`` connection whose librdkafka config replaces the
        spec's connection settings; ``None`` uses the spec's ``kafka`` dict. (templated)
    :param checkpoint_conn_id: an Airflow connection with the checkpoint storage credentials;
        ``None`` uses the worker's ambient credentials. (templated)
    :param specs_dir: the folder of every pipeline's spec, to check that prefix, group,
        checkpoint and name are not shared; ``None`` leaves those rules "not checked". (templated)
    :param master: the Spark master URL the job will run on, to check the checkpoint storage;
        ``None`` uses ``spark.master`` of the spec's ``spark_conf``. (templated)
    :param longest_expected_pause_ms: how long the pipeline may be stopped and still resume
        (compared with ``transactional.id.expiration.ms``, ``offsets.retention.minutes`` and the input
        retention).
    """

    template_fields: Sequence[str] = (*EosUseCaseOperator.template_fields, "specs_dir", "master")
    ui_color = "#d4edda"

    def __init__(
        self,
        *,
        specs_dir: str | None = None,
        master: str | None = None,
        longest_expected_pause_ms: int = DEFAULT_LONGEST_EXPECTED_PAUSE_MS,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.specs_dir = specs_dir
        self.master = master
        self.longest_expected_pause_ms = longest_expected_pause_ms

    def execute(self, context: Context) -> dict[str, Any]:
        """Run the catalog; return the report, or push it and fail on errors."""
        from airflow_provider_eos.usecases.preflight import preflight

        with task_failures():
            result = preflight(
                self.pipeline_clients(),
                # A rendered empty template means "not given", like None.
                specs_dir=self.specs_dir or None,
                master=self.master or None,
                longest_expected_pause_ms=self.longest_expected_pause_ms,
            )
        return self.present(context, result)
