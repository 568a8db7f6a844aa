"""An ``eos`` command that crashes on an error it did not foresee exits 2 (an error), never 1 (a finding).

The crash is a real one: ``devstack status`` on a folder whose state file is a directory, which the
broker's state reader does not expect (it reads a file). The command runs as a user runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from airflow_provider_eos.cli.main import main
from airflow_provider_eos.cli.output import ExitCode

SPEC = {
    "name": "orders", "kafka": {"bootstrap.servers": "localhost:1"}, "input_topics": ["orders"],
    "output_topic": "orders-out", "group_id": "orders-sink", "transactional_id_prefix": "orders-eos",
    "checkpoint_location": "/tmp/checkpoints/orders",
}


def crashing_state_dir(tmp_path: Path) -> Path:
    (tmp_path / "devstack.json").mkdir()  # a directory where the state file belongs: reading it raises OSError
    return tmp_path


def test_an_unforeseen_crash_of_the_eos_command_exits_2_with_the_traceback(tmp_path: Path) -> None:
    state = crashing_state_dir(tmp_path)
    done = subprocess.run([sys.executable, "-m", "airflow_provider_eos.cli", "devstack", "status", "--state-dir",
                           str(state)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == ExitCode.ERROR, (done.returncode, done.stderr)
    assert "IsADirectoryError" in done.stderr and "Traceback" in done.stderr, "the traceback says where it happened"
    assert "error: " in done.stderr


def test_an_unforeseen_crash_with_json_prints_the_error_object(tmp_path: Path, capsys, monkeypatch) -> None:
    from airflow_provider_eos.usecases import preflight

    def crash(*args: object, **kwargs: object) -> None:
        raise KeyError("partition")  # a bug's typical shape

    monkeypatch.setattr(preflight, "preflight", crash)
    spec = tmp_path / "orders.json"
    spec.write_text(json.dumps(SPEC))
    code = main(["preflight", "--spec", str(spec), "--json"])
    out = capsys.readouterr()
    assert code == ExitCode.ERROR
    error = json.loads(out.out)
    assert error["error"] == "KeyError" and "partition" in error["message"] and error["fix"]
    assert "Traceback" in out.err
