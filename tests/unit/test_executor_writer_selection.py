"""``executor_writer: jvm``: the spec's switch, the Java producer's settings, and the writer's jar at submit.

Plans are built for real; nothing is submitted and Maven never runs (``build=False`` at submit time).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from airflow_provider_eos.core.errors import PrerequisiteError, SpecError
from airflow_provider_eos.core.spec import ExecutorWriter, Mode, PipelineSpec
from airflow_provider_eos.core.spec.submission import Connector
from airflow_provider_eos.devstack import jars
from airflow_provider_eos.kafka.settings import java_sink_producer_config
from airflow_provider_eos.spark.executor_writers import PythonTasks, task_runner
from airflow_provider_eos.spark.jvm_writer import JvmTasks
from airflow_provider_eos.spark.submit_command import plan_submit

SPEC = PipelineSpec(
    name="orders", kafka={"bootstrap.servers": "broker:9092", "linger.ms": 50, "compression.type": "zstd",
                          "sasl.mechanism": "SCRAM-SHA-512", "security.protocol": "SASL_PLAINTEXT",
                          "sasl.username": "job", "sasl.password": "pw-7f3e"},
    input_topics=["orders-in"], output_topic="orders-out", group_id="orders-sink",
    transactional_id_prefix="orders-eos", checkpoint_location="/tmp/ckpt", transaction_timeout_ms=20_000,
)


def test_jvm_is_the_default_and_the_switch_is_validated():
    assert SPEC.executor_writer is ExecutorWriter.JVM
    assert isinstance(task_runner(SPEC), JvmTasks)
    assert isinstance(task_runner(SPEC.with_overrides(executor_writer="python")), PythonTasks)
    with pytest.raises(SpecError, match="executor_writer"):
        SPEC.with_overrides(executor_writer="scala")


def test_the_java_producer_gets_the_python_writers_settings_through_the_one_translation():
    config = java_sink_producer_config(SPEC)
    assert {k: config[k] for k in ("acks", "enable.idempotence", "transaction.timeout.ms", "linger.ms",
                                   "compression.type", "batch.size")} == {
        "acks": "all", "enable.idempotence": "true", "transaction.timeout.ms": "20000", "linger.ms": "50",
        "compression.type": "zstd", "batch.size": "1000000"}
    # The id is each partition's, set by the task; a short transaction bounds deliveries and requests with it.
    assert "transactional.id" not in config
    assert config["delivery.timeout.ms"] == "20000" and int(config["request.timeout.ms"]) <= 20000 - 50
    assert "pw-7f3e" in config["sasl.jaas.config"]
    # initTransactions sends InitProducerId as a retried request, held back for the backoff: short unless set.
    assert config["retry.backoff.ms"] == "20"
    assert java_sink_producer_config(SPEC.with_overrides(
        kafka={**SPEC.kafka, "retry.backoff.ms": "250"}))["retry.backoff.ms"] == "250"


@pytest.fixture
def jvm_spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "orders.yaml"
    path.write_text(yaml.safe_dump(SPEC.with_overrides(executor_writer="jvm").to_dict()))
    return path


@pytest.fixture
def connector(tmp_path: Path) -> Connector:
    jar = tmp_path / "spark-sql-kafka-0-10_2.13-4.2.0.jar"
    jar.write_bytes(b"PK")
    return Connector(jars=[str(jar)])


def _plan(spec_file: Path, tmp_path: Path, connector: Connector):
    spec = PipelineSpec.load(spec_file)
    return plan_submit(spec_file, spec, mode=spec.mode, work_dir=tmp_path / "work", connector=connector)


def test_a_missing_writer_jar_is_refused_at_submit_naming_the_fix(jvm_spec_file, tmp_path, connector, monkeypatch):
    monkeypatch.setenv("EOS_HOME", str(tmp_path / "eos-home"))
    with pytest.raises(PrerequisiteError) as caught:
        _plan(jvm_spec_file, tmp_path, connector)
    assert "make install" in caught.value.fix and "executor_writer: python" in caught.value.fix


def test_the_built_writer_jar_goes_with_the_connector_jars(jvm_spec_file, tmp_path, connector, monkeypatch):
    monkeypatch.setenv("EOS_HOME", str(tmp_path / "eos-home"))
    module = tmp_path / "jvm"
    (module / "src").mkdir(parents=True)
    (module / "pom.xml").write_text("<project/>")
    (module / "src" / "A.java").write_text("class A {}")
    monkeypatch.setattr(jars, "EXECUTOR_WRITER_MODULE", module)
    target = tmp_path / "eos-home" / "jars" / "eos-executor-writer"
    target.mkdir(parents=True)
    (target / jars.EXECUTOR_WRITER_JAR).write_bytes(b"PK")
    (target / ".eos-resolved").write_text(jars._module_fingerprint(module))
    submit = _plan(jvm_spec_file, tmp_path, connector)
    assert submit.jars == [*connector.jars, str(target / jars.EXECUTOR_WRITER_JAR)]
    # A source newer than the jar: refused until rebuilt, never a stale writer.
    (module / "src" / "A.java").write_text("class A { int changed; }")
    with pytest.raises(PrerequisiteError, match="older than its sources"):
        _plan(jvm_spec_file, tmp_path, connector)
    (module / "src" / "A.java").write_text("class A {}")
    # The Python writers' spec ships it to read the batch's plan (the plan reader is the jar's); with the
    # driver writer, it reads no plan and ships none.
    python_spec = tmp_path / "python.yaml"
    python_spec.write_text(yaml.safe_dump(SPEC.with_overrides(executor_writer="python").to_dict()))
    assert _plan(python_spec, tmp_path, connector).jars == [*connector.jars, str(target / jars.EXECUTOR_WRITER_JAR)]
    python_driver = tmp_path / "python-driver.yaml"
    python_driver.write_text(yaml.safe_dump(SPEC.with_overrides(executor_writer="python", writers="driver").to_dict()))
    assert _plan(python_driver, tmp_path, connector).jars == connector.jars
    # Nor does an at-least-once pipeline; the driver writer's ships it (its spill tasks are the jar's).
    other = tmp_path / "at-least-once.yaml"
    other.write_text(yaml.safe_dump(SPEC.with_overrides(mode="at-least-once").to_dict()))
    assert _plan(other, tmp_path, connector).jars == connector.jars
    driver = tmp_path / "driver.yaml"
    driver.write_text(yaml.safe_dump(SPEC.with_overrides(writers="driver").to_dict()))
    assert _plan(driver, tmp_path, connector).jars == [*connector.jars, str(target / jars.EXECUTOR_WRITER_JAR)]


def test_a_run_that_is_not_exactly_once_needs_no_writer_jar_whatever_the_specs_mode(jvm_spec_file, tmp_path,
                                                                                    connector, monkeypatch):
    # No jar built at all: an exactly-once run is refused, an at-least-once (or a plug-in's) run of the same
    # exactly-once spec (`eos run --mode`) starts, as it ships no executor writer.
    monkeypatch.setenv("EOS_HOME", str(tmp_path / "eos-home"))
    spec = PipelineSpec.load(jvm_spec_file)
    assert spec.mode is Mode.EXACTLY_ONCE
    with pytest.raises(PrerequisiteError):
        plan_submit(jvm_spec_file, spec, mode=Mode.EXACTLY_ONCE, work_dir=tmp_path / "work", connector=connector)
    at_least_once = plan_submit(jvm_spec_file, spec, mode="at-least-once", work_dir=tmp_path / "work",
                                connector=connector)
    assert at_least_once.jars == connector.jars
    assert spec.ships_jvm_jar() and not spec.ships_jvm_jar(Mode.AT_LEAST_ONCE)
    assert not spec.ships_jvm_jar("noop")
