"""``eos`` on a secured pipeline never prints a password: not in its output, its logs or its errors.

Every command a user or an operator runs against a spec whose ``kafka`` settings hold a SASL
password, as the recovery principal (with its ACLs) and with a wrong password (the error paths),
in table and JSON form. The pipeline DAG's own checks (task logs, XCom, rendered fields, command
lines, the Spark event log, files) are in ``tests/dags/test_secured_pipeline.py``.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_provider_eos.devstack.security import add_scram_user
from tests.support.pipeline import PipelineHarness
from tests.support.secret_leaks import assert_absent

pytestmark = [pytest.mark.integration]

CONNECTION_SETTINGS = ("bootstrap.servers", "security.protocol", "sasl.mechanism", "ssl.ca.location")


def _eos(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "airflow_provider_eos.cli", *args], capture_output=True, text=True,
                          timeout=180, check=False)


def _spec_as(harness: PipelineHarness, admin: dict[str, Any], user: str, password: str, path: Path) -> Path:
    settings = {**{k: admin[k] for k in CONNECTION_SETTINGS if k in admin}, "sasl.username": user,
                "sasl.password": password}
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump(harness.spec.with_overrides(kafka=settings).to_dict()))
    return path


def test_eos_commands_never_print_the_password(secured_kafka, secured_admin_settings, tmp_path):
    admin = dict(secured_admin_settings)
    harness = PipelineHarness(admin, tmp_path, spec_kafka={"bootstrap.servers": admin["bootstrap.servers"]})
    user = f"eos-recovery-{uuid.uuid4().hex[:6]}"
    password = add_scram_user(admin, user)
    spec = _spec_as(harness, admin, user, password, tmp_path / "recovery.yaml")
    granted = _eos("acls", "--spec", str(spec), "--principal", f"User:{user}", "--role", "recovery", "--apply",
                   "--admin-config", str(secured_kafka.client_config))
    assert granted.returncode == 0, granted.stderr
    wrong = f"wrong-{uuid.uuid4().hex}"
    bad_spec = _spec_as(harness, admin, user, wrong, tmp_path / "wrong.yaml")

    outputs: dict[str, str] = {}
    for name, args in {
        "verify": ("verify", "--spec", str(spec)),
        "abort dry run": ("abort", "--spec", str(spec)),
        "rewind plan": ("repair", "rewind", "--spec", str(spec), "--to-batch", "-1"),
        "align dry run": ("repair", "align", "--spec", str(spec)),
        "health": ("health", "--spec", str(spec), "--samples", "1"),
        "preflight": ("preflight", "--spec", str(spec)),
    }.items():
        for form in ((), ("--json",)):
            done = _eos(*args, *form)
            outputs[f"{name}{' json' if form else ''}"] = done.stdout + done.stderr
        wrong_args = tuple(str(bad_spec) if a == str(spec) else a for a in args)
        failed = _eos(*wrong_args)
        outputs[f"{name} (wrong password)"] = failed.stdout + failed.stderr
        assert failed.returncode != 0, (name, failed.stdout[-2000:], failed.stderr[-2000:])
        if not name.endswith(("plan", "dry run")) or name == "abort dry run":  # repairs stop at the missing checkpoint
            # At once and by name, not as a transport timeout after the request's full timeout.
            assert f"refused the SASL login of user {user!r} (SCRAM-SHA-512)" in failed.stderr, failed.stderr[-2000:]

    assert "IN_SYNC" in outputs["verify"] or "NO_" in outputs["verify"], outputs["verify"][-2000:]
    assert_absent(password, **outputs)
    assert_absent(wrong, **outputs)
    assert_absent(admin["sasl.password"], **outputs)
