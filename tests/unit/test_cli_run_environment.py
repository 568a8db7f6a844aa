"""``eos run`` starts spark-submit with the allow-listed environment (a real launch of a stand-in spark-submit)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import yaml


def _spec_with_stand_in_submit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A spec file, and spark-submit replaced by a stand-in that records its environment and succeeds."""
    from airflow_provider_eos.spark import submit_command
    from tests.support.env_dump import fake_spark_submit

    spec_file = tmp_path / "orders.yaml"
    spec_file.write_text(yaml.safe_dump({
        "name": "orders", "kafka": {"bootstrap.servers": "broker:9092"}, "input_topics": ["in"],
        "output_topic": "out", "group_id": "g", "transactional_id_prefix": "orders-eos",
        "checkpoint_location": str(tmp_path / "checkpoint"),
        "connector": {"jars": ["https://repo.example.com/jars/spark-sql-kafka-0-10_2.13-4.2.0.jar"]},
    }))
    monkeypatch.setattr(submit_command, "spark_submit_executable", lambda: str(fake_spark_submit(tmp_path)))
    return spec_file


def _eos_run(spec_file: Path, master: str) -> int:
    """``eos run``'s exit code; it forwards SIGTERM to the driver while it runs, so the handler is put back."""
    from airflow_provider_eos.cli.main import main

    handler = signal.getsignal(signal.SIGTERM)
    try:
        return main(["run", "--spec", str(spec_file), "--master", master])
    finally:
        signal.signal(signal.SIGTERM, handler)


def test_eos_run_starts_spark_submit_without_the_workers_secrets(tmp_path, monkeypatch) -> None:
    """The real launcher of ``eos run``, starting a stand-in spark-submit that records its environment."""
    from tests.support.env_dump import names_seen

    spec_file = _spec_with_stand_in_submit(tmp_path, monkeypatch)
    for name in ("AIRFLOW_CONN_X", "AIRFLOW__CORE__FERNET_KEY", "AIRFLOW__API_AUTH__JWT_SECRET"):
        monkeypatch.setenv(name, "secret")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dx=1")
    monkeypatch.setenv("EOS_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # CI sets none: the test sets what must travel
    assert _eos_run(spec_file, "local[1]") == 0
    names = names_seen(spec_file)
    assert not {name for name in names if name.startswith("AIRFLOW")}, names
    assert {"PATH", "PYTHONPATH", "SPARK_SUBMIT_OPTS", "EOS_LOG_LEVEL", "EOS_DRIVER_PID_FILE", "PYSPARK_PYTHON",
            "PYSPARK_DRIVER_PYTHON"} <= names, names


def test_eos_run_gives_spark_submit_the_master_in_one_spelling_and_refuses_a_blank_one(tmp_path, monkeypatch,
                                                                                        capsys) -> None:
    """The command ``eos run`` starts (a stand-in spark-submit): ``--master`` as canonical_master spells it."""
    spec_file = _spec_with_stand_in_submit(tmp_path, monkeypatch)
    assert _eos_run(spec_file, " Spark://Master.Example:7077/ ") == 0
    started = capsys.readouterr().err
    assert " --master spark://master.example:7077 " in started, started
    assert _eos_run(spec_file, "  ") == 2
    refused = capsys.readouterr().err
    assert "--master '  ' is empty." in refused and "local[2]" in refused, refused


def test_eos_run_tags_its_driver_as_the_submit_operator_does(tmp_path, monkeypatch, capsys) -> None:
    """A token of its own (so the driver takes the pipeline's lease), in the environment and the Spark settings,
    and ``eos run`` as the driver's owner; a token already in the environment is kept."""
    import re

    from airflow_provider_eos.core.driver import DRIVER_OWNER_PID_ENV, DRIVER_TOKEN_CONF, DRIVER_TOKEN_ENV
    from tests.support.env_dump import names_seen

    spec_file = _spec_with_stand_in_submit(tmp_path, monkeypatch)
    monkeypatch.delenv(DRIVER_TOKEN_ENV, raising=False)
    assert _eos_run(spec_file, "local[1]") == 0
    assert {DRIVER_TOKEN_ENV, DRIVER_OWNER_PID_ENV} <= names_seen(spec_file)
    started = capsys.readouterr().err
    (token,) = re.findall(r"^driver token (eos-orders-[0-9a-f]{20})$", started, re.MULTILINE)
    assert f"{DRIVER_TOKEN_CONF}={token}" in started, started
    assert _eos_run(spec_file, "local[1]") == 0
    assert token not in capsys.readouterr().err, "two invocations shared a token"

    monkeypatch.setenv(DRIVER_TOKEN_ENV, "eos-orders-0123456789abcdef0123")
    assert _eos_run(spec_file, "local[1]") == 0
    assert "driver token eos-orders-0123456789abcdef0123\n" in capsys.readouterr().err
