"""``eos airflow up|status|down`` as a user runs them, in a state folder of their own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from tests.support.airflow_api import AirflowApi

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.deployment]

EOS = Path(sys.executable).with_name("eos")


def _eos(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(EOS), *args], capture_output=True, text=True, timeout=300, check=False)


# A second deployment beside the shared one (started by the same LocalAirflow code) costs a minute of both
# cores: the CLI's own up/status/down output runs in `make test-long`.
@pytest.mark.long
def test_up_prints_the_ui_and_login_status_and_down_stop_everything(tmp_path: Path) -> None:
    state = tmp_path / "devstack"
    try:
        up = _eos("airflow", "up", "--state-dir", str(state), "--spark-master", "local[1]")
        assert up.returncode == 0, up.stdout + up.stderr
        lines = dict(line.split("=", 1) for line in up.stdout.splitlines() if line.startswith("ui="))
        url = lines["ui"]
        assert url.startswith("http://127.0.0.1:")
        (login,) = [line for line in up.stdout.splitlines() if line.startswith("login: ")]
        password = login.split("password=", 1)[1].split()[0]
        assert f"pipelines={state / 'pipelines'}" in up.stdout
        info = LocalAirflow(state).recorded()
        assert info is not None and len(info.daemons) == 4

        status = _eos("airflow", "status", "--state-dir", str(state))
        assert status.returncode == 0 and f"ui={url}" in status.stdout, status.stdout + status.stderr
        with AirflowApi(url, "admin", password) as api:
            assert api.get("/connections/spark_default")["host"] == "local[1]"
            dag_ids = {d["dag_id"] for d in api.get("/dags")["dags"]}
            assert dag_ids >= {"eos_health_check", "eos_manual_recovery"}, dag_ids
            # The pipelines folder is empty: no pipeline, no pipeline DAG (each spec brings its own).
            assert not [d for d in dag_ids if d.startswith("eos_pipeline")], dag_ids
    finally:
        down = _eos("airflow", "down", "--state-dir", str(state))
    assert down.returncode == 0 and "stopped" in down.stdout, down.stdout + down.stderr
    assert not any(pid_alive(d.pid) for d in info.daemons)
    assert not (state / "airflow").exists()
    status = _eos("airflow", "status", "--state-dir", str(state))
    assert status.returncode == 1 and "no Airflow deployment runs" in status.stdout
