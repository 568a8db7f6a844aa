"""``EosPreflightOperator`` inside ``dag.test()`` against the real broker.

The DAG runs in a child process (this module run as ``python -m tests.dags.test_preflight_operator
<builder> <args> <result file>``) with :mod:`tests.support.built_dags` (see its docstring for why
a child process).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.built_dags import child_main, new_dag, run_in_airflow, task_log

pytestmark = [pytest.mark.airflow, pytest.mark.integration]


def write_spec(directory: Path, bootstrap: str, name: str, **fields: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    spec = {
        "name": name,
        "kafka": {"bootstrap.servers": bootstrap},
        "input_topics": [f"{name}-in"],
        "output_topic": f"{name}-out",
        "group_id": f"{name}-sink",
        "transactional_id_prefix": f"{name}-eos",
        "checkpoint_location": str(directory.parent / "checkpoints" / name),
        "trigger": "10 seconds",
        "batch_budget_ms": 20_000,
        **fields,
    }
    path = directory / f"{name}.json"
    path.write_text(json.dumps(spec))
    return path


# -- the DAG, built in the child process ----------------------------------------------------------


def build_preflight(spec_path: str, specs_dir: str, bad_spec_path: str):
    from airflow_provider_eos.operators.preflight import EosPreflightOperator

    with new_dag("eos_preflight", params={"master": "local[2]"}) as dag:
        EosPreflightOperator(
            task_id="preflight", spec_path=spec_path, specs_dir=specs_dir, master="{{ params.master }}"
        )
        EosPreflightOperator(
            task_id="preflight_bad",
            spec_path=bad_spec_path,
            master="{{ params.master }}",
            # A configuration error does not heal by retrying: the task must fail at once.
            retries=2,
            retry_delay=dt.timedelta(seconds=0),
        )
    return dag


# -- the test -------------------------------------------------------------------------------------


def test_preflight_passes_on_a_good_spec_and_fails_on_a_bad_one_with_the_report_in_xcom(
    airflow_home: Path, tmp_path: Path, bootstrap: str, topic_factory
) -> None:
    specs = tmp_path / "specs"
    name = f"pf{uuid.uuid4().hex[:8]}"
    good = write_spec(
        specs,
        bootstrap,
        name,
        input_topics=[topic_factory("pf-in", partitions=2)],
        output_topic=topic_factory("pf-out"),
    )
    write_spec(specs, bootstrap, f"{name}_other")
    # Its topics do not exist; kept out of the specs folder, which lists the good pipelines.
    bad = write_spec(tmp_path / "broken", bootstrap, f"{name}_bad")

    run = run_in_airflow(
        __name__, "preflight", tmp_path, spec_path=str(good), specs_dir=str(specs), bad_spec_path=str(bad)
    )

    assert run.states == {"preflight": "success", "preflight_bad": "failed"}, run.log[-6000:]
    assert run.tries["preflight_bad"] == 1
    assert run.rendered["preflight"]["master"] == "local[2]"

    report = run.xcoms["preflight"]
    assert report["ok"] is True and report["errors"] == [] and report["pipeline"] == name
    by_code = {f["code"]: f for f in report["findings"]}
    assert by_code["EOS104"]["status"] == "pass" and "900000" in by_code["EOS104"]["message"]
    assert by_code["EOS403"]["status"] == "pass" and by_code["EOS305"]["status"] == "pass"
    good_log = task_log(run, "preflight")
    assert f"Pre-flight of pipeline {name!r}: PASSED" in good_log
    assert "code    severity  result" in good_log and "EOS401" in good_log

    failed = run.xcoms["preflight_bad"]
    assert failed["ok"] is False and {"EOS205", "EOS206"} <= set(failed["errors"])
    bad_log = task_log(run, "preflight_bad")
    assert "AirflowFailException" in bad_log and "EOS205 input topics exist" in bad_log
    assert f"input topic '{name}_bad-in' does not exist" in bad_log and "Fixes:" in bad_log


if __name__ == "__main__":
    child_main(globals())
