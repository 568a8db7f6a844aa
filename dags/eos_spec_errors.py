"""eos_spec_errors: no DAG; an Airflow DAG import error naming each invalid pipeline spec file, if any.

The eos DAGs (eos_pipeline, eos_manual_recovery, eos_health_check) skip an invalid spec file so
that every other pipeline keeps its runs, form entries and recovery. This file fails to import
while a spec file is invalid, so Airflow's "DAG Import Errors" list names the file and its
problem (line, column, key; never a value) where Airflow users look for a broken DAG definition,
without taking any DAG down. Fixing (or removing) the file clears the error at the next parse.
"""

from __future__ import annotations

from pathlib import Path

from airflow_provider_eos.spec_registry import discover, specs_directory

discover(specs_directory(Path(__file__).parent / "pipelines")).raise_if_invalid()
