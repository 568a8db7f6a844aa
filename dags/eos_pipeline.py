"""eos_pipeline__<name>: one DAG per pipeline spec, pre-flight to recovery: docs/dags-and-operators.md."""
from pathlib import Path

from airflow_provider_eos.dags import pipeline_dags

# Airflow finds generated DAGs in the module's globals: one per spec of pipelines/ (or $EOS_SPECS_DIR).
globals().update(pipeline_dags(Path(__file__).parent / "pipelines"))
