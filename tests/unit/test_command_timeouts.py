"""Every command the product waits for has a deadline; a command that outlives it is stopped and named.

A stand-in that sleeps takes the place of Java, Maven, pip or ``airflow``; each site's deadline is
made short. Without a deadline the stand-in would end after a few seconds with exit 0 and the
caller would carry on as if it had worked.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from airflow_provider_eos.core.errors import (
    AirflowDeploymentError,
    DevstackError,
    JobEnvironmentError,
    PrerequisiteError,
)
from airflow_provider_eos.devstack.broker_nodes import pid_alive

SLEEP_S = 4
SHORT_S = 0.5


def sleeper(tmp_path: Path, name: str) -> Path:
    """An executable ``name`` that starts a grandchild, records its pid, sleeps and then exits 0."""
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\nsleep {SLEEP_S * 10} &\necho $! > {tmp_path / (name + '.child')}\n"
                      f"sleep {SLEEP_S}\nexit 0\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def assert_stopped_quickly(began: float, tmp_path: Path, name: str) -> None:
    assert time.monotonic() - began < SLEEP_S, "the caller waited for the command to end by itself"
    child = tmp_path / (name + ".child")
    deadline = time.monotonic() + 5
    while not child.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(child.read_text())
    deadline = time.monotonic() + 5
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(pid):
        os.kill(pid, 9)
        pytest.fail("the command's own children were left running")


def test_run_bounded_stops_the_command_and_what_it_started(tmp_path: Path) -> None:
    from airflow_provider_eos.subprocesses import run_bounded

    began = time.monotonic()
    with pytest.raises(DevstackError, match=rf"`{tmp_path / 'tool'} --flag` did not finish within 0.5s") as raised:
        run_bounded([str(sleeper(tmp_path, "tool")), "--flag"], timeout_s=SHORT_S, error=DevstackError,
                    fix="look at the tool")
    assert raised.value.fix == "look at the tool"
    assert_stopped_quickly(began, tmp_path, "tool")


def test_run_bounded_returns_what_a_prompt_command_did(tmp_path: Path) -> None:
    from airflow_provider_eos.subprocesses import run_bounded

    done = run_bounded(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout_s=30, error=DevstackError, fix="-",
                       capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def test_kafka_storage_format_has_a_deadline(tmp_path: Path, monkeypatch) -> None:
    from airflow_provider_eos.devstack import broker_start
    from airflow_provider_eos.devstack.broker_config import NodeLayout

    monkeypatch.setattr(broker_start, "FORMAT_TIMEOUT_S", SHORT_S, raising=False)
    node = NodeLayout(1, 1, 2, str(tmp_path / "node"))
    settings = broker_start.StartSettings(str(sleeper(tmp_path, "java")), "cp", 1000, "4.0.0", tmp_path / "node",
                                          "512m", "plaintext", None)
    began = time.monotonic()
    with pytest.raises(DevstackError, match=r"kafka\.tools\.StorageTool format.* did not finish within 0.5s") as raised:
        broker_start.format_storage(node, [node], "id", settings)
    assert "java" in raised.value.fix.lower()
    assert_stopped_quickly(began, tmp_path, "java")


def test_maven_has_a_deadline(tmp_path: Path, monkeypatch) -> None:
    from airflow_provider_eos.devstack import jars

    monkeypatch.setenv("EOS_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(jars, "MAVEN_TIMEOUT_S", SHORT_S, raising=False)
    mvn = sleeper(tmp_path, "mvn")
    monkeypatch.setattr(jars, "require_tool", lambda name, fix: str(mvn))
    monkeypatch.setattr(jars, "require_java", lambda: "java")
    began = time.monotonic()
    with pytest.raises(PrerequisiteError, match=r"mvn -B .* did not finish within 0.5s") as raised:
        jars._resolve("kafka-pom.xml", tmp_path / "home" / "jars" / "kafka", {"kafka.version": "4.1.1"})
    assert "maven.log" in raised.value.fix
    assert not (tmp_path / "home" / "jars" / "kafka" / ".eos-resolved").exists(), "nothing is recorded as resolved"
    assert_stopped_quickly(began, tmp_path, "mvn")


def test_the_job_environment_build_steps_have_a_deadline(tmp_path: Path, monkeypatch) -> None:
    from airflow_provider_eos.spark import job_environment

    monkeypatch.setattr(job_environment, "STEP_TIMEOUT_S", SHORT_S, raising=False)
    log_file = tmp_path / "env.log"
    began = time.monotonic()
    stopped = r"installing the requirements: `.*pip install` did not finish within 0.5s"
    with pytest.raises(JobEnvironmentError, match=stopped):
        job_environment._run([str(sleeper(tmp_path, "pip")), "install"], "installing the requirements", log_file)
    assert_stopped_quickly(began, tmp_path, "pip")


def test_the_devstack_airflow_commands_have_a_deadline(tmp_path: Path, monkeypatch) -> None:
    from airflow_provider_eos.devstack import airflow_deployment

    monkeypatch.setattr(airflow_deployment, "AIRFLOW_COMMAND_TIMEOUT_S", SHORT_S, raising=False)
    monkeypatch.setattr(airflow_deployment, "_airflow_bin", lambda: str(sleeper(tmp_path, "airflow")))
    deployment = airflow_deployment.LocalAirflow(tmp_path / "state")
    (deployment.work_dir / "logs").mkdir(parents=True)
    began = time.monotonic()
    with pytest.raises(AirflowDeploymentError, match=r"airflow db migrate` did not finish within 0.5s") as raised:
        deployment._airflow(dict(os.environ), ["db", "migrate"], "db-migrate")
    assert "db-migrate.log" in raised.value.fix
    assert_stopped_quickly(began, tmp_path, "airflow")


def test_the_demos_airflow_commands_have_a_deadline(tmp_path: Path, monkeypatch) -> None:
    from demo import run as demo

    monkeypatch.setattr(demo, "AIRFLOW_COMMAND_TIMEOUT_S", SHORT_S, raising=False)
    airflow = demo._Airflow(tmp_path / "home", tmp_path / "specs", tmp_path)
    airflow.airflow = str(sleeper(tmp_path, "airflow"))
    began = time.monotonic()
    with pytest.raises(DevstackError, match=r"airflow dags reserialize` did not finish within 0.5s"):
        airflow("dags", "reserialize", log_name="reserialize")
    assert_stopped_quickly(began, tmp_path, "airflow")
