"""EosSparkSubmitOperator keeps connection secrets off the command line, out of XCom and logs (docs/security.md).

The operator runs for real against real Airflow connections (``AIRFLOW_CONN_*``); only the
Spark provider hook's ``submit`` is replaced, by a recorder that looks at what spark-submit
would get (argv, the ``env`` the operator hands the provider's ``submit``) and at the spec file
while the job would run.
"""

from __future__ import annotations

import json
import logging
import stat
import sys
import uuid
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_home", "run_input_not_read")]

SASL_PASSWORD = "sasl-password-7c1d0e"
S3_SECRET = "s3-secret-91b2c3"
SPEC = {
    "name": "orders",
    "kafka": {"bootstrap.servers": "spec-broker:9092", "linger.ms": 50},
    "input_topics": ["orders-in"],
    "output_topic": "orders-out",
    "group_id": "orders-sink",
    "transactional_id_prefix": "orders-eos",
    "checkpoint_location": "/tmp/checkpoints/orders",
    "connector": {"jars": ["https://repo.example.com/jars/spark-sql-kafka-0-10_2.13-4.2.0.jar"]},
}


def unique_run_id() -> str:
    """A run id no other test uses: the driver token derives from it, and the operator stops any
    process carrying its run's token (a previous attempt's driver), even one of a test on the other worker."""
    return f"manual__{uuid.uuid4().hex}"


class RecordingTaskInstance:
    dag_id = "eos_orders"

    def __init__(self) -> None:
        self.xcom: dict[str, object] = {}

    def xcom_push(self, key: str, value: object) -> None:
        self.xcom[key] = value


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """What each spark-submit would have received, seen while it would run."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    seen: list[dict] = []

    def record(hook: SparkSubmitHook, application: str = "", **kwargs: object) -> None:
        argv = hook._build_spark_submit_command(application)
        spec_arg = argv[argv.index("--spec") + 1]
        shipped = argv[argv.index("--files") + 1] if "--files" in argv else None
        spec_file = Path(shipped or spec_arg)
        properties = argv[argv.index("--properties-file") + 1] if "--properties-file" in argv else None
        seen.append({
            "properties": Path(properties).read_text() if properties else None,
            "properties_mode": stat.S_IMODE(Path(properties).stat().st_mode) if properties else None,
            "argv": argv, "env": dict(kwargs.get("env") or {}), "spec_file": spec_file, "spec_arg": spec_arg,
            "file_mode": stat.S_IMODE(spec_file.stat().st_mode),
            "folder_mode": stat.S_IMODE(spec_file.parent.stat().st_mode),
            "spec": yaml.safe_load(spec_file.read_text()),
        })
        if hook._is_yarn_cluster_mode:  # as YARN's client prints it; the provider then follows it (not here)
            hook._yarn_application_id = "application_1_0001"

    monkeypatch.setattr(SparkSubmitHook, "submit", record)
    monkeypatch.setattr(SparkSubmitHook, "_start_yarn_application_status_tracking", lambda hook, app_id: None)
    return seen


def run_operator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, deploy_mode: str, master: str,
                 archive: Path | None) -> RecordingTaskInstance:
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    spec_path = tmp_path / "orders.yaml"
    spec_path.write_text(yaml.safe_dump({**SPEC, "spark_conf": {"spark.hadoop.fs.s3a.secret.key": S3_SECRET}}))
    monkeypatch.setenv("AIRFLOW_CONN_EOS_SASL_KAFKA", json.dumps({"conn_type": "kafka", "extra": {
        "bootstrap.servers": "sasl-broker:9094", "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "eos-job", "sasl.password": SASL_PASSWORD,
    }}))
    # YARN cluster mode needs the ResourceManager's address (it follows and stops the application there).
    rm = {"yarn_resourcemanager_webapp_address": "127.0.0.1:9"} if master == "yarn" else {}
    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps(
        {"conn_type": "spark", "host": master, "extra": {"deploy-mode": deploy_mode, **rm}}))
    # durable=False: YARN cluster mode's resumable tracking (the RM API) is not what is tested here.
    operator = EosSparkSubmitOperator(task_id="submit", spec_path=str(spec_path), kafka_conn_id="eos_sasl_kafka",
                                      conn_id="eos_spark", python_environment=str(archive) if archive else None,
                                      durable=False)
    ti = RecordingTaskInstance()
    operator.execute({"ti": ti, "run_id": unique_run_id()})
    for field in operator.template_fields:
        assert SASL_PASSWORD not in repr(getattr(operator, field, None)), field
    return ti


@pytest.mark.parametrize(("deploy_mode", "master"), [("client", "spark://127.0.0.1:7077"), ("cluster", "yarn")])
def test_secrets_reach_the_job_only_in_a_private_spec_file_that_is_removed_after(
    tmp_path, monkeypatch, submitted, caplog, deploy_mode, master
):
    archive = tmp_path / "eos-job-env.tar.gz"
    archive.write_bytes(b"\x1f\x8b")
    caplog.set_level(logging.DEBUG)
    ti = run_operator(tmp_path, monkeypatch, deploy_mode=deploy_mode, master=master, archive=archive)

    (run,) = submitted
    # The job gets the connection's settings, through the file only.
    assert run["spec"]["kafka"]["sasl.password"] == SASL_PASSWORD
    assert run["spec"]["kafka"]["bootstrap.servers"] == "sasl-broker:9094"
    assert not any(SASL_PASSWORD in arg or S3_SECRET in arg for arg in run["argv"]), run["argv"]
    # The spec's secret Spark setting, in the private properties file only.
    assert f"spark.hadoop.fs.s3a.secret.key={S3_SECRET}" in run["properties"] and run["properties_mode"] == 0o600
    assert not any(SASL_PASSWORD in f"{k}={v}" for k, v in run["env"].items())
    assert run["file_mode"] == 0o600 and run["folder_mode"] == 0o700
    assert not run["spec_file"].exists(), "the private spec copy outlived the task"
    assert SASL_PASSWORD not in json.dumps(ti.xcom, default=str)
    assert SASL_PASSWORD not in caplog.text and S3_SECRET not in caplog.text
    assert not Path(run["argv"][run["argv"].index("--properties-file") + 1]).exists(), "the secret settings outlived"
    argv = run["argv"]
    assert f"{archive}#environment" in argv
    if deploy_mode == "cluster":
        assert run["spec_arg"] == "spec.yaml" and argv[argv.index("--files") + 1] == str(run["spec_file"])
    else:
        assert "--files" not in argv and run["spec_arg"] == str(run["spec_file"])


def test_the_spec_as_written_is_passed_by_path_when_no_connection_is_used(tmp_path, monkeypatch, submitted):
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    spec_path = tmp_path / "orders.yaml"
    spec_path.write_text(yaml.safe_dump(SPEC))
    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    EosSparkSubmitOperator(task_id="submit", spec_path=str(spec_path), conn_id="eos_spark").execute(
        {"ti": RecordingTaskInstance(), "run_id": unique_run_id()})
    (run,) = submitted
    assert run["spec_arg"] == str(spec_path) and spec_path.exists()
    # No packed environment: today's local interpreter for driver and executors.
    assert run["env"]["PYSPARK_PYTHON"] == run["env"]["PYSPARK_DRIVER_PYTHON"] == sys.executable
    assert "--archives" not in run["argv"]


def test_connection_ids_are_templated_and_an_empty_kafka_conn_id_names_no_connection(tmp_path, monkeypatch,
                                                                                     submitted):
    """``kafka_conn_id`` rendered empty (``{{ var.value.get('eos_kafka', '') }}``) is no connection, as elsewhere."""
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    spec_path = tmp_path / "orders.yaml"
    spec_path.write_text(yaml.safe_dump(SPEC))
    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("AIRFLOW_CONN_EOS_CHECKPOINT", json.dumps({"conn_type": "generic"}))
    operator = EosSparkSubmitOperator(task_id="submit", spec_path=str(spec_path), conn_id="eos_spark",
                                      kafka_conn_id="{{ params.kafka }}", checkpoint_conn_id="{{ params.checkpoint }}")
    operator.render_template_fields({"params": {"kafka": "", "checkpoint": "eos_checkpoint"}})
    assert operator.kafka_conn_id == "" and operator.checkpoint_conn_id == "eos_checkpoint"

    operator.execute({"ti": RecordingTaskInstance(), "run_id": unique_run_id()})
    (run,) = submitted
    assert run["spec_arg"] == str(spec_path), "the spec as written: no connection's settings"
    assert run["spec"]["kafka"]["bootstrap.servers"] == "spec-broker:9092"


def test_a_bad_connector_argument_fails_the_dag_parse_naming_it():
    from airflow_provider_eos.core.errors import SpecError
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    with pytest.raises(SpecError) as caught:
        EosSparkSubmitOperator(task_id="submit", spec_path="/x.yaml", connector={"packages": ["kafka"]})
    assert "EosSparkSubmitOperator argument connector" in str(caught.value) and "'kafka'" in str(caught.value)


AZURE_KEY = "spark.hadoop.fs.azure.account.key.eosdata.dfs.core.windows.net"
AZURE_SECRET = "YXp1cmUta2V5LTkxYjI="


def test_the_operators_conf_takes_the_specs_secret_split(tmp_path, monkeypatch, submitted, caplog):
    """A storage key given as the operator's ``conf`` goes to the private file, like the spec's spark_conf."""
    from airflow.sdk._shared.secrets_masker import redact

    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    spec_path = tmp_path / "orders.yaml"
    spec_path.write_text(yaml.safe_dump(SPEC))
    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    repositories = "https://deploy:repo-pw-5b5b@repo.example.com/maven2"
    operator = EosSparkSubmitOperator(task_id="submit", spec_path=str(spec_path), conn_id="eos_spark", conf={
        AZURE_KEY: AZURE_SECRET, "spark.jars.repositories": repositories, "spark.executor.memory": "2g"})
    operator.render_template_fields({})
    # The rendered conf (the task's Rendered Templates tab) shows neither secret.
    shown = json.dumps(redact(operator.conf, "conf"))
    assert AZURE_SECRET not in shown and "repo-pw-5b5b" not in shown and "2g" in shown
    caplog.set_level(logging.DEBUG)
    operator.execute({"ti": RecordingTaskInstance(), "run_id": unique_run_id()})

    (run,) = submitted
    assert not any(AZURE_SECRET in arg or "repo-pw-5b5b" in arg for arg in run["argv"]), run["argv"]
    assert "spark.executor.memory=2g" in run["argv"]
    assert f"{AZURE_KEY}={AZURE_SECRET.replace('=', chr(92) + '=')}" in run["properties"] or AZURE_SECRET in run[
        "properties"]
    assert "repo-pw-5b5b" in run["properties"] and run["properties_mode"] == 0o600
    assert AZURE_SECRET not in caplog.text and "repo-pw-5b5b" not in caplog.text


def test_spark_submit_starts_with_an_allow_listed_environment_not_the_workers_secrets(tmp_path, monkeypatch):
    """The provider's hook really starts a stand-in spark-submit, which records the environment it got."""
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator
    from tests.support.env_dump import fake_spark_submit, names_seen

    spec_path = tmp_path / "orders.yaml"
    spec_path.write_text(yaml.safe_dump(SPEC))
    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    for name in ("AIRFLOW_CONN_X", "AIRFLOW__CORE__FERNET_KEY", "AIRFLOW__API_AUTH__JWT_SECRET"):
        monkeypatch.setenv(name, "secret")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dx=1")
    monkeypatch.setenv("EOS_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # CI sets none: the test sets what must travel
    operator = EosSparkSubmitOperator(task_id="submit", spec_path=str(spec_path), conn_id="eos_spark",
                                      spark_binary=str(fake_spark_submit(tmp_path)), env_vars={"MY_SETTING": "x"})
    operator.execute({"ti": RecordingTaskInstance(), "run_id": unique_run_id()})
    names = names_seen(spec_path)
    assert not {name for name in names if name.startswith("AIRFLOW")}, names
    # What the job reads travels, and so does what the DAG author passed explicitly.
    assert {"PATH", "PYTHONPATH", "SPARK_SUBMIT_OPTS", "EOS_LOG_LEVEL", "EOS_DRIVER_TOKEN", "EOS_DRIVER_OWNER_PID",
            "PYSPARK_PYTHON", "MY_SETTING"} <= names, names


def test_openlineage_transport_properties_take_the_secret_split(tmp_path, monkeypatch, submitted):
    """The provider injects OpenLineage's transport (its API key too) into ``conf``: before the split, not after."""
    from airflow_provider_eos.operators import spark_submit

    api_key = "ol-key-7f3e9c1a5b"

    def transport(properties: dict, context: object) -> dict:
        return {**properties, "spark.openlineage.transport.type": "http",
                "spark.openlineage.transport.url": "http://lineage.example.com:5000",
                "spark.openlineage.transport.auth.type": "api_key",
                "spark.openlineage.transport.auth.apiKey": api_key}

    monkeypatch.setattr(spark_submit, "inject_transport_information_into_spark_properties", transport)
    spec_path = tmp_path / "orders.yaml"
    spec_path.write_text(yaml.safe_dump(SPEC))
    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    operator = spark_submit.EosSparkSubmitOperator(task_id="submit", spec_path=str(spec_path), conn_id="eos_spark",
                                                   openlineage_inject_transport_info=True)
    operator.execute({"ti": RecordingTaskInstance(), "run_id": unique_run_id()})

    (run,) = submitted
    assert not any(api_key in arg for arg in run["argv"]), run["argv"]
    assert "spark.openlineage.transport.url=http://lineage.example.com:5000" in run["argv"]
    assert f"spark.openlineage.transport.auth.apiKey={api_key}" in run["properties"]
    assert run["properties_mode"] == 0o600


AWS_SECRET = "aws-secret-3e8f0d"


@pytest.mark.parametrize("deploy_mode", ["client", "cluster"])
def test_a_secret_in_env_vars_is_never_on_the_command_line_on_yarn(tmp_path, monkeypatch, submitted, deploy_mode):
    """The provider turns each ``env_vars`` entry into ``--conf spark.yarn.appMasterEnv.K=V`` (``ps`` shows it).

    Cluster mode: the driver is the application master, so the entries go to the private properties file.
    Client mode: the driver is spark-submit's own process and gets them from its environment; the
    application master (only the executor launcher) needs none but the ``SPARK*`` ones, which Spark's
    executor launcher passes on to the executors.
    """
    from airflow_provider_eos.core.driver import DRIVER_TOKEN_ENV
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    spec_path = tmp_path / "orders.yaml"
    spec_path.write_text(yaml.safe_dump(SPEC))
    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps({"conn_type": "spark", "host": "yarn", "extra": {
        "deploy-mode": deploy_mode, "yarn_resourcemanager_webapp_address": "127.0.0.1:9"}}))
    operator = EosSparkSubmitOperator(task_id="submit", spec_path=str(spec_path), conn_id="eos_spark", durable=False,
                                      env_vars={"AWS_SECRET_ACCESS_KEY": AWS_SECRET, "SPARK_LOCAL_DIRS": "/data"})
    operator.execute({"ti": RecordingTaskInstance(), "run_id": unique_run_id()})

    (run,) = submitted
    assert not any(AWS_SECRET in arg for arg in run["argv"]), run["argv"]
    assert not any("appMasterEnv" in arg for arg in run["argv"]), run["argv"]
    assert run["env"]["AWS_SECRET_ACCESS_KEY"] == AWS_SECRET, "spark-submit's environment (a client-mode driver's)"
    assert run["properties_mode"] == 0o600
    assert "spark.yarn.appMasterEnv.SPARK_LOCAL_DIRS=/data" in run["properties"]
    if deploy_mode == "cluster":
        assert f"spark.yarn.appMasterEnv.AWS_SECRET_ACCESS_KEY={AWS_SECRET}" in run["properties"]
        assert f"spark.yarn.appMasterEnv.{DRIVER_TOKEN_ENV}=" in run["properties"]
    else:
        assert AWS_SECRET not in run["properties"], "the executor launcher got the driver's secret"
