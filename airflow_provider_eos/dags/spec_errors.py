"""The check behind ``dags/eos_spec_errors.py``: no DAG, an Airflow DAG import error naming each invalid spec file.

The eos DAGs (each pipeline's eos_pipeline__<name>, eos_manual_recovery, eos_health_check) skip an
invalid spec file (its pipeline has no DAG) so that every other pipeline keeps its DAG, runs, form
entries and recovery. A DAG file calling
:func:`raise_if_invalid_specs` fails to import while a spec file is invalid, so Airflow's "DAG
Import Errors" list names the file and its problem (line, column, key; never a value) where
Airflow users look for a broken DAG definition, without taking any DAG down. Fixing (or removing)
the spec file clears the error at the next parse.
"""

from __future__ import annotations

from pathlib import Path

from airflow_provider_eos.spec_registry import discover, specs_directory

__all__ = ["raise_if_invalid_specs"]


def raise_if_invalid_specs(pipelines: str | Path) -> None:
    """Fail (the DAG file's import error) naming each invalid spec file of the folder; return if there is none.

    :param pipelines: the folder of pipeline specs when neither ``$EOS_SPECS_DIR`` nor ``[eos] specs_dir``
        names one (the DAG file passes ``pipelines/`` next to itself).
    :raises SpecError: if any spec file is invalid.
    """
    discover(specs_directory(Path(pipelines))).raise_if_invalid()
