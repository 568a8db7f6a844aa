"""The submit operator, or a stand-in where the ``spark`` extra is not installed, so every DAG parses anyway.

An Airflow worker that runs only pre-flight, health and recovery installs no Spark (setup.cfg's
``spark`` extra brings PySpark and the Spark provider). :class:`EosSparkSubmitOperator` subclasses
the Spark provider's operator, so importing it there fails, and with it the DAG file of every
pipeline's DAG (``eos_pipeline__<name>``). :func:`spark_submit_operator` returns the real operator where
the extra is installed and :class:`SparkExtraMissingOperator` elsewhere: the DAG keeps its tasks, and only a submit task
that runs on such a worker fails, naming the fix.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_provider_eos.core.errors import PrerequisiteError
from airflow_provider_eos.operators.use_case import task_failures

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["SPARK_EXTRA_FIX", "SparkExtraMissingOperator", "spark_submit_operator"]

log = logging.getLogger(__name__)

#: The modules only the ``spark`` extra installs: a missing one means the extra is missing, nothing else.
SPARK_EXTRA_MODULES = ("airflow.providers.apache.spark", "airflow.providers.common.compat", "pyspark", "py4j")
SPARK_EXTRA_FIX = (
    "install the spark extra on the workers that run the submit tasks: pip install 'airflow-provider-eos[spark]' "
    "(workers that only run pre-flight, health and recovery need no Spark)"
)


def _missing_spark_module(exc: ModuleNotFoundError) -> bool:
    name = exc.name or ""
    return any(name == module or name.startswith(module + ".") for module in SPARK_EXTRA_MODULES)


class SparkExtraMissingOperator(BaseOperator):
    """Stands in for :class:`~airflow_provider_eos.operators.spark_submit.EosSparkSubmitOperator` where the
    ``spark`` extra is not installed; running it fails with the fix, without retrying.

    :param spec_path: the pipeline spec file, as the real operator takes it. (templated)
    :param conn_id: the ``spark`` connection the real operator would use.
    :param kafka_conn_id: the ``kafka`` connection the real operator would use.
    """

    template_fields = ("spec_path",)
    ui_color = "#f0c2c2"

    def __init__(self, *, spec_path: str, conn_id: str | None = None, kafka_conn_id: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec_path, self.conn_id, self.kafka_conn_id = spec_path, conn_id, kafka_conn_id

    def execute(self, context: Context) -> None:
        missing = _unimportable_spark_module()
        with task_failures():
            raise PrerequisiteError(
                f"task {self.task_id} submits the Spark job, but this worker cannot import "
                f"{missing or 'the Spark provider'!r}: the spark extra of airflow-provider-eos is not installed here",
                fix=SPARK_EXTRA_FIX,
            )


def _unimportable_spark_module() -> str | None:
    """The module of the ``spark`` extra that cannot be imported here; ``None`` when the submit operator imports.

    :raises ModuleNotFoundError: a module outside the extra is missing (a bug, not a missing extra).
    """
    try:
        import airflow_provider_eos.operators.spark_submit  # noqa: F401
    except ModuleNotFoundError as exc:
        if not _missing_spark_module(exc):
            raise
        return exc.name or "airflow.providers.apache.spark"
    return None


def spark_submit_operator() -> type[BaseOperator]:
    """:class:`EosSparkSubmitOperator`, or :class:`SparkExtraMissingOperator` where the ``spark`` extra is missing.

    Imported here, not at the DAG factory's top, so a worker without the extra parses every DAG.
    Any other import error is raised: it is a bug, not a missing extra.
    """
    missing = _unimportable_spark_module()
    if missing is not None:
        # Logged at parse time too, where a DAG author looks first; the task says it again when it runs.
        log.warning("The spark extra is not installed (no module %r): the pipelines' submit tasks fail if run "
                    "here. Fix: %s", missing, SPARK_EXTRA_FIX)
        return SparkExtraMissingOperator
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    return EosSparkSubmitOperator
