"""eos_pipeline: one exactly-once pipeline with pre-flight, supervision and recovery: docs/dags-and-operators.md."""
from pathlib import Path

from airflow_provider_eos.dags import pipeline_dag

dag = pipeline_dag(Path(__file__).parent / "pipelines")
