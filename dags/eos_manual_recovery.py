"""eos_manual_recovery: the on-call form (verify, abort, rewind, align; dry run first): docs/dags-and-operators.md."""
from pathlib import Path

from airflow_provider_eos.dags import manual_recovery_dag

dag = manual_recovery_dag(Path(__file__).parent / "pipelines")
