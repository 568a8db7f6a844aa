"""The health check maps its reports over the specs folder as the run finds it, not as the DAG file was parsed.

A worker parses the DAG file again to run a mapped task and takes the n-th entry of its own list; a literal
list made a report check another pipeline, or none, after a spec was added or removed (design note 90).
The deployment's side: ``tests/deployment/test_health_check_folder.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_eos.core.dag_ids import HEALTH_PIPELINES_TASK_ID, HEALTH_TASK_ID

EXAMPLE_SPEC = Path(__file__).parents[2] / "dags" / "pipelines" / "orders_enrich.yaml"


def _spec(folder: Path, name: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(EXAMPLE_SPEC.read_text().replace("name: orders_enrich", f"name: {name}"))
    return path


@pytest.fixture
def specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("EOS_SPECS_DIR", raising=False)
    monkeypatch.delenv("AIRFLOW__EOS__SPECS_DIR", raising=False)
    return tmp_path


def test_the_reports_are_mapped_over_the_listing_tasks_result_not_a_parsed_list(specs: Path) -> None:
    from airflow_provider_eos.dags.health_check import health_check_dag

    _spec(specs, "zeta")
    dag = health_check_dag(specs)
    report = dag.get_task(HEALTH_TASK_ID)
    (mapped_over,) = report.expand_input.value.values()
    assert not isinstance(mapped_over, list), "a list fixed at parse time"
    assert mapped_over.operator.task_id == HEALTH_PIPELINES_TASK_ID
    assert dag.get_task(HEALTH_PIPELINES_TASK_ID).downstream_task_ids == {HEALTH_TASK_ID}
    # The docs still name what the parse found.
    assert "**Pipelines checked:** `zeta`" in dag.doc_md


def test_the_listing_reads_the_folder_when_it_runs_and_skips_invalid_files(specs: Path) -> None:
    from airflow_provider_eos.dags.health_check import health_check_dag, pipelines_to_check

    zeta = _spec(specs, "zeta")
    health_check_dag(specs)
    # Added after the parse, sorted before the one the parse found: the run's list has both, by name.
    alpha = _spec(specs, "alpha")
    (specs / "broken.yaml").write_text("name: [not a name\n")
    assert pipelines_to_check.function(str(specs)) == [str(alpha), str(zeta)]
    zeta.unlink()
    assert pipelines_to_check.function(str(specs)) == [str(alpha)]
    alpha.unlink()
    assert pipelines_to_check.function(str(specs)) == []
