"""``eos run`` starts spark-submit with the allow-listed environment (a real launch of a stand-in spark-submit)."""

from __future__ import annotations


def test_eos_run_starts_spark_submit_without_the_workers_secrets(tmp_path, monkeypatch) -> None:
    """The real launcher of ``eos run``, starting a stand-in spark-submit that records its environment."""
    import signal

    import yaml

    from airflow_provider_eos.cli.main import main
    from airflow_provider_eos.spark import submit_command
    from tests.support.env_dump import fake_spark_submit, names_seen

    spec_file = tmp_path / "orders.yaml"
    spec_file.write_text(yaml.safe_dump({
        "name": "orders", "kafka": {"bootstrap.servers": "broker:9092"}, "input_topics": ["in"],
        "output_topic": "out", "group_id": "g", "transactional_id_prefix": "orders-eos",
        "checkpoint_location": str(tmp_path / "checkpoint"),
        "connector": {"jars": ["https://repo.example.com/jars/spark-sql-kafka-0-10_2.13-4.2.0.jar"]},
    }))
    monkeypatch.setattr(submit_command, "spark_submit_executable", lambda: str(fake_spark_submit(tmp_path)))
    for name in ("AIRFLOW_CONN_X", "AIRFLOW__CORE__FERNET_KEY", "AIRFLOW__API_AUTH__JWT_SECRET"):
        monkeypatch.setenv(name, "secret")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dx=1")
    monkeypatch.setenv("EOS_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # CI sets none: the test sets what must travel
    handler = signal.getsignal(signal.SIGTERM)  # `eos run` forwards SIGTERM to the driver while it runs
    try:
        assert main(["run", "--spec", str(spec_file), "--master", "local[1]"]) == 0
    finally:
        signal.signal(signal.SIGTERM, handler)
    names = names_seen(spec_file)
    assert not {name for name in names if name.startswith("AIRFLOW")}, names
    assert {"PATH", "PYTHONPATH", "SPARK_SUBMIT_OPTS", "EOS_LOG_LEVEL", "EOS_DRIVER_PID_FILE", "PYSPARK_PYTHON",
            "PYSPARK_DRIVER_PYTHON"} <= names, names


def test_eos_run_gives_spark_submit_the_master_in_one_spelling_and_refuses_a_blank_one(tmp_path, monkeypatch,
                                                                                        capsys) -> None:
    """The command ``eos run`` starts (a stand-in spark-submit): ``--master`` as canonical_master spells it."""
    import signal

    import yaml

    from airflow_provider_eos.cli.main import main
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
    handler = signal.getsignal(signal.SIGTERM)
    try:
        assert main(["run", "--spec", str(spec_file), "--master", " Spark://Master.Example:7077/ "]) == 0
        started = capsys.readouterr().err
        assert " --master spark://master.example:7077 " in started, started
        assert main(["run", "--spec", str(spec_file), "--master", "  "]) == 2
    finally:
        signal.signal(signal.SIGTERM, handler)
    refused = capsys.readouterr().err
    assert "--master '  ' is empty." in refused and "local[2]" in refused, refused
