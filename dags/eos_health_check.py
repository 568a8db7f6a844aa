"""eos_health_check: every 15 minutes, one health report per pipeline (docs/dags-and-operators.md)."""
from pathlib import Path

from airflow_provider_eos.dags import health_check_dag

dag = health_check_dag(Path(__file__).parent / "pipelines")
