"""The pre-flight task (DESIGN.md section 4): run the rule catalog before a pipeline starts.

The operator loads the spec (optionally with a ``kafka`` connection's settings and a checkpoint
storage connection's credentials), gathers the facts live, logs the report's table, and makes
the report's ``to_dict()`` the task's XCom ``return_value`` in every outcome. Failed ERROR
rules fail the task without retrying (``AirflowFailException``): a retry cannot change a
configuration. Not reaching the cluster at all fails it with ``AirflowException``, which is
retried as configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator, BaseXCom
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_provider_eos.core.errors import EosError, SpecError
from airflow_provider_eos.core.preflight import DEFAULT_LONGEST_EXPECTED_PAUSE_MS, PreflightReport
from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook
from airflow_provider_eos.hooks.kafka_admin import load_pipeline_spec

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["EosPreflightOperator"]


class EosPreflightOperator(BaseOperator):
    """Check a pipeline's spec, Kafka cluster, topics, sink group and checkpoint before it starts.

    Logs the report (one row per rule, then the fix of each failed rule) and returns its
    ``to_dict()``; fails when a rule of severity ERROR fails, after pushing the report, so a
    downstream task or a person can read which codes failed from XCom.

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
        (compared with ``transactional.id.expiration.ms`` and the input retention).
    """

    template_fields: Sequence[str] = ("spec_path", "kafka_conn_id", "checkpoint_conn_id", "specs_dir", "master")
    ui_color = "#d4edda"

    def __init__(
        self,
        *,
        spec_path: str,
        kafka_conn_id: str | None = None,
        checkpoint_conn_id: str | None = None,
        specs_dir: str | None = None,
        master: str | None = None,
        longest_expected_pause_ms: int = DEFAULT_LONGEST_EXPECTED_PAUSE_MS,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.spec_path = spec_path
        self.kafka_conn_id = kafka_conn_id
        self.checkpoint_conn_id = checkpoint_conn_id
        self.specs_dir = specs_dir
        self.master = master
        self.longest_expected_pause_ms = longest_expected_pause_ms

    def execute(self, context: Context) -> dict[str, Any]:
        """Run the catalog; return the report, or push it and fail on errors."""
        from airflow_provider_eos.kafka.cluster_facts import run_preflight

        try:
            spec = load_pipeline_spec(self.spec_path, self.kafka_conn_id or None)
            self.log.info(
                "Pre-flight of pipeline %r from %s; Kafka %s from %s",
                spec.name,
                self.spec_path,
                spec.kafka["bootstrap.servers"],
                f"connection {self.kafka_conn_id!r}" if self.kafka_conn_id else "the spec",
            )
            storage_options = CheckpointStorageHook(self.checkpoint_conn_id or None).get_storage_options(
                spec.checkpoint_location
            )
            report = run_preflight(
                spec,
                # A rendered empty template means "not given", like None.
                specs_dir=self.specs_dir or None,
                master=self.master or None,
                storage_options=storage_options,
                longest_expected_pause_ms=self.longest_expected_pause_ms,
            )
        except SpecError as err:
            raise AirflowFailException(str(err)) from err
        except EosError as err:
            raise AirflowException(str(err)) from err
        return self._conclude(context, report)

    def _conclude(self, context: Context, report: PreflightReport) -> dict[str, Any]:
        table = report.render()
        result = report.to_dict()
        if report.ok:
            self.log.info("%s", table)
            return result
        self.log.error("%s", table)
        if self.do_xcom_push:
            # The task is about to fail, so the return value would never reach XCom.
            context["ti"].xcom_push(key=BaseXCom.XCOM_RETURN_KEY, value=result)
        failed = ", ".join(f"{f.code} {f.title}" for f in report.errors)
        raise AirflowFailException(f"pre-flight of pipeline {report.pipeline!r} failed: {failed}.\n{table}")
