"""eos_spec_errors: no DAG; an Airflow DAG import error naming each invalid pipeline spec file, if any."""
from pathlib import Path

from airflow_provider_eos.dags import raise_if_invalid_specs

raise_if_invalid_specs(Path(__file__).parent / "pipelines")
