"""The spark-submit plan: the packed environment, the spec's travel, the connector jars (docs/clusters.md).

Plans are built for real (entry script, zipped package); nothing is submitted.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from airflow_provider_eos.core.errors import PrerequisiteError, SubmissionError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.spec.submission import Connector
from airflow_provider_eos.devstack.jars import executor_writer_jar
from airflow_provider_eos.spark.submit_command import SubmitPlan, plan_submit

KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"


@pytest.fixture
def spec_file(tmp_path: Path) -> Path:
    spec = PipelineSpec(
        name="orders", kafka={"bootstrap.servers": "broker:9092"}, input_topics=["orders-in"],
        output_topic="orders-out", group_id="orders-sink", transactional_id_prefix="orders-eos",
        checkpoint_location="hdfs://nn:8020/checkpoints/orders",
    )
    path = tmp_path / "orders.yaml"
    path.write_text(yaml.safe_dump(spec.to_dict()))
    return path


@pytest.fixture
def jar(tmp_path: Path) -> str:
    path = tmp_path / "jars" / "spark-sql-kafka-0-10_2.13-4.2.0.jar"
    path.parent.mkdir()
    path.write_bytes(b"PK")
    return str(path)


@pytest.fixture
def archive(tmp_path: Path) -> str:
    path = tmp_path / "eos-job-env.tar.gz"
    path.write_bytes(b"\x1f\x8b")
    return str(path)


def plan(spec_file: Path, tmp_path: Path, **kwargs: object) -> SubmitPlan:
    spec = PipelineSpec.load(spec_file)
    return plan_submit(spec_file, spec, mode=spec.mode, work_dir=tmp_path / "work", **kwargs)


def option(command: list[str], name: str) -> str | None:
    return command[command.index(name) + 1] if name in command else None


def confs(command: list[str]) -> dict[str, str]:
    return dict(command[i + 1].split("=", 1) for i, arg in enumerate(command) if arg == "--conf")


def test_without_a_packed_environment_driver_and_executors_run_this_interpreter(spec_file, tmp_path, jar):
    submit = plan(spec_file, tmp_path, connector=Connector(jars=[jar]))
    assert submit.environment() == {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    command = submit.command("spark-submit", "local[2]")
    assert "--archives" not in command and "--files" not in command
    assert "spark.pyspark.python" not in confs(command)
    # The default executor writer's jar goes with the connector's.
    assert option(command, "--jars") == f"{jar},{executor_writer_jar(build=False)}"
    assert command[-4:] == ["--spec", str(spec_file), "--mode", "exactly-once"]


def test_spark_submit_runs_the_spark_jobs_shell_and_ships_both_packages(spec_file, tmp_path, jar):
    import spark_jobs

    submit = plan(spec_file, tmp_path, connector=Connector(jars=[jar]))
    assert submit.application == Path(spark_jobs.__file__).parent / "eos_job.py"
    (py_files,) = submit.py_files
    names = set(zipfile.ZipFile(py_files).namelist())
    # The executors import the example transforms (and the product code they call) from the zip.
    assert {"spark_jobs/__init__.py", "spark_jobs/eos_job.py", "spark_jobs/transforms/json_enrich.py",
            "airflow_provider_eos/spark/entry_point.py", "airflow_provider_eos/spark/job.py"} <= names
    assert not [name for name in names if name.startswith("airflow_provider_eos/jobs/")]


def test_a_packed_environment_is_shipped_and_executors_run_its_interpreter(spec_file, tmp_path, jar, archive):
    submit = plan(spec_file, tmp_path, connector=Connector(jars=[jar]), python_environment=archive)
    command = submit.command("spark-submit", "spark://127.0.0.1:7077")
    assert option(command, "--archives") == f"{archive}#environment"
    conf = confs(command)
    assert conf["spark.pyspark.python"] == "./environment/bin/python"
    # Client mode: the driver runs here, where the archive is not unpacked.
    assert conf["spark.pyspark.driver.python"] == sys.executable
    assert "PYSPARK_PYTHON" not in submit.environment() and "PYSPARK_DRIVER_PYTHON" not in submit.environment()
    # The submitter's code still travels, so driver and executors run the same bytes of this package.
    assert option(command, "--py-files").endswith("eos-py-files.zip")
    assert command[-4:] == ["--spec", str(spec_file), "--mode", "exactly-once"]


def test_the_spec_names_the_environment_and_the_argument_replaces_it(spec_file, tmp_path, jar, archive):
    other = tmp_path / "other-env.tar.gz"
    other.write_bytes(b"\x1f\x8b")
    spec = PipelineSpec.load(spec_file).with_overrides(python_environment=archive)
    spec_file.write_text(yaml.safe_dump(spec.to_dict()))
    assert plan(spec_file, tmp_path, connector=Connector(jars=[jar])).archives == [f"{archive}#environment"]
    replaced = plan(spec_file, tmp_path, connector=Connector(jars=[jar]), python_environment=str(other))
    assert replaced.archives == [f"{other}#environment"]


def test_in_cluster_deploy_mode_the_spec_travels_with_files_and_is_opened_by_its_base_name(
    spec_file, tmp_path, jar, archive
):
    submit = plan(spec_file, tmp_path, connector=Connector(jars=[jar]), python_environment=archive,
                  deploy_mode="cluster")
    command = submit.command("spark-submit", "yarn")
    assert option(command, "--files") == str(spec_file)
    assert command[-4:] == ["--spec", "orders.yaml", "--mode", "exactly-once"]
    assert confs(command)["spark.pyspark.driver.python"] == "./environment/bin/python"


@pytest.mark.parametrize("master", ["spark://127.0.0.1:7077", " spark://m1:7077,m2:7077"])
def test_cluster_deploy_mode_on_a_standalone_master_is_refused_naming_the_master(spec_file, tmp_path, jar, master):
    with pytest.raises(SubmissionError) as refused:
        plan(spec_file, tmp_path, connector=Connector(jars=[jar]), deploy_mode="cluster", master=master)
    assert f"standalone master {master.strip()!r}" in refused.value.message
    assert "runs no Python application in cluster deploy mode" in refused.value.message
    assert "client" in refused.value.fix and "YARN" in refused.value.fix
    # Client mode there, and cluster mode on YARN, are planned.
    assert plan(spec_file, tmp_path, connector=Connector(jars=[jar]), deploy_mode="client", master=master).files == []
    assert plan(spec_file, tmp_path, connector=Connector(jars=[jar]), deploy_mode="cluster", master="yarn").files


def test_a_missing_archive_or_jar_names_the_path(spec_file, tmp_path, jar):
    with pytest.raises(SubmissionError) as caught:
        plan(spec_file, tmp_path, connector=Connector(jars=[jar]), python_environment=str(tmp_path / "nope.tar.gz"))
    assert f"python_environment '{tmp_path / 'nope.tar.gz'}' does not exist" in str(caught.value)
    with pytest.raises(SubmissionError) as caught:
        plan(spec_file, tmp_path, connector=Connector(jars=[str(tmp_path / "missing.jar")]))
    assert f"connector jar '{tmp_path / 'missing.jar'}' does not exist" in str(caught.value)
    assert caught.value.fix


def test_urls_are_the_clusters_to_fetch(spec_file, tmp_path):
    url = "https://repo.example.com/jars/spark-sql-kafka-0-10_2.13-4.2.0.jar"
    submit = plan(spec_file, tmp_path, connector=Connector(jars=[url]),
                  python_environment="hdfs://nn:8020/envs/eos-job-env.tar.gz")
    assert submit.jars == [url, str(executor_writer_jar(build=False))]
    assert submit.archives == ["hdfs://nn:8020/envs/eos-job-env.tar.gz#environment"]


def test_maven_packages_go_to_spark_with_the_users_repository_and_no_connector_jars(spec_file, tmp_path):
    connector = Connector(packages=[KAFKA_PACKAGE], repositories=["https://repo.example.com/maven2"])
    command = plan(spec_file, tmp_path, connector=connector).command("spark-submit", "local[2]")
    # Only the executor writer's own jar, which no Maven repository serves.
    assert option(command, "--jars") == str(executor_writer_jar(build=False))
    conf = confs(command)
    assert conf["spark.jars.packages"] == KAFKA_PACKAGE
    assert conf["spark.jars.repositories"] == "https://repo.example.com/maven2"


def test_the_default_connector_is_the_devstack_jars_and_maven_never_runs_at_submit(
    spec_file, tmp_path, monkeypatch
):
    import airflow_provider_eos.devstack.jars as jars

    monkeypatch.setenv("EOS_HOME", str(tmp_path / "empty-eos-home"))

    def no_maven(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"Maven ran at submit time: {args}")

    monkeypatch.setattr(jars.subprocess, "run", no_maven)
    with pytest.raises(PrerequisiteError) as caught:
        plan(spec_file, tmp_path)
    assert "not resolved" in str(caught.value) and "eos jars" in caught.value.fix and "connector" in caught.value.fix


def test_an_environment_given_on_the_command_line_is_checked_and_made_absolute(
    spec_file, tmp_path, jar, archive, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    submit = plan(spec_file, tmp_path, connector=Connector(jars=[jar]), python_environment="eos-job-env.tar.gz")
    assert submit.archives == [f"{archive}#environment"]
    with pytest.raises(SubmissionError) as caught:
        plan(spec_file, tmp_path, connector=Connector(jars=[jar]), python_environment=str(tmp_path))
    assert "does not end with .tar.gz" in str(caught.value) and "eos package" in caught.value.fix


def test_secret_spark_settings_go_to_a_private_properties_file_after_spark_defaults(
    spec_file, tmp_path, jar, monkeypatch
):
    conf_dir = tmp_path / "spark-conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("spark.eventLog.enabled true\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    (tmp_path / "work").mkdir()
    secret = "s3-secret-d41d8cd9"
    spec = PipelineSpec.load(spec_file).with_overrides(spark_conf={
        "spark.hadoop.fs.s3a.secret.key": secret, "spark.hadoop.fs.s3a.access.key": "AKIA-not-secret",
        "spark.executor.memory": "1g"})
    submit = plan_submit(spec_file, spec, mode=spec.mode, work_dir=tmp_path / "work", connector=Connector(jars=[jar]))
    command = submit.command("spark-submit", "local[2]")
    assert not any(secret in arg for arg in command), command
    assert confs(command)["spark.executor.memory"] == "1g"
    assert "spark.hadoop.fs.s3a.secret.key" not in confs(command)
    properties = Path(option(command, "--properties-file"))
    assert properties.parent == tmp_path / "work" and oct(properties.stat().st_mode & 0o777) == "0o600"
    text = properties.read_text()
    # spark-submit skips spark-defaults.conf when given --properties-file: the file carries it first.
    assert text.index("spark.eventLog.enabled true") < text.index(f"spark.hadoop.fs.s3a.secret.key={secret}")


def test_no_secret_settings_no_properties_file_and_a_given_one_is_kept(spec_file, tmp_path, jar):
    (tmp_path / "work").mkdir()
    assert "--properties-file" not in plan(spec_file, tmp_path, connector=Connector(jars=[jar])).command("s", "m")
    given = tmp_path / "mine.properties"
    given.write_text("spark.foo bar\n")
    spec = PipelineSpec.load(spec_file)
    kept = plan_submit(spec_file, spec, mode=spec.mode, work_dir=tmp_path / "work", properties_file=given,
                       connector=Connector(jars=[jar]))
    assert kept.properties_file == given
    with_secret = plan_submit(spec_file, spec.with_overrides(spark_conf={"spark.hive.token": "t0k3n=\\x"}),
                              mode=spec.mode, work_dir=tmp_path / "work", properties_file=given,
                              connector=Connector(jars=[jar]))
    text = with_secret.properties_file.read_text()
    assert "spark.foo bar" in text and "spark.hive.token=t0k3n=\\\\x" in text


AZURE_KEY = "spark.hadoop.fs.azure.account.key.eosdata.dfs.core.windows.net"
SECRET_CONF = {
    AZURE_KEY: "YXp1cmUta2V5LTNmOWE=",
    "spark.hadoop.fs.azure.sas.checkpoints.eosdata.blob.core.windows.net": "sv=2022-11-02&sp=rl&sig=sas-sig-0b7e",
    "spark.hadoop.fs.azure.account.oauth2.client.secret": "oauth-secret-c4d1",
    "spark.hadoop.fs.s3a.bucket.eos-checkpoints.secret.key": "s3-bucket-secret-91aa",
    "spark.hadoop.fs.s3a.session.token": "s3-session-token-5e22",
    "spark.hadoop.google.cloud.auth.service.account.json.keyfile": "/secrets/gcs-key-1e0f.json",
    "spark.hadoop.fs.gs.auth.service.account.private.key": "gcs-private-key-7a7a",
    "spark.ssl.keyStorePassword": "keystore-pw-a1b2",
    "spark.kafka.clusters.main.sasl.jaas.config": 'PlainLoginModule required username="u" password="jaas-pw-d9";',
    # secret by value, under names that say nothing
    "spark.jars.repositories": "https://deploy:repo-pw-3c3c@repo.example.com/maven2",
    "spark.hive.metastore.uris.note": "https://ghp-token-7d7d@hive.example.com/",
    "spark.executor.extraJavaOptions": "-XX:+UseG1GC -Djavax.net.ssl.trustStorePassword=trust-pw-8e8e",
}
SECRET_VALUES = ["YXp1cmUta2V5LTNmOWE", "sas-sig-0b7e", "oauth-secret-c4d1", "s3-bucket-secret-91aa",
                 "s3-session-token-5e22", "gcs-key-1e0f", "gcs-private-key-7a7a", "keystore-pw-a1b2", "jaas-pw-d9",
                 "repo-pw-3c3c", "ghp-token-7d7d", "trust-pw-8e8e"]


@pytest.mark.parametrize("given", ["spec", "operator"])
def test_no_storage_credential_reaches_the_command_line_only_the_private_file(spec_file, tmp_path, jar, given):
    """The spec's spark_conf and the operator's conf argument take the same split."""
    (tmp_path / "work").mkdir()
    spec = PipelineSpec.load(spec_file)
    public = {"spark.executor.memory": "1g"}
    if given == "spec":
        spec, extra = spec.with_overrides(spark_conf={**SECRET_CONF, **public}), None
    else:
        extra = {**SECRET_CONF, **public}
    submit = plan_submit(spec_file, spec, mode=spec.mode, work_dir=tmp_path / "work", connector=Connector(jars=[jar]),
                         extra_conf=extra)
    command = submit.command("spark-submit", "local[2]")
    for value in SECRET_VALUES:
        assert not any(value in arg for arg in command), (value, command)
    assert confs(command)["spark.executor.memory"] == "1g"
    assert not set(SECRET_CONF) & set(confs(command))
    text = Path(option(command, "--properties-file")).read_text()
    assert all(value in text for value in SECRET_VALUES), text
    assert f"{AZURE_KEY}=YXp1cmUta2V5LTNmOWE\\=" in text or f"{AZURE_KEY}=YXp1cmUta2V5LTNmOWE=" in text


def test_the_operators_conf_wins_over_the_specs(spec_file, tmp_path, jar):
    (tmp_path / "work").mkdir()
    spec = PipelineSpec.load(spec_file).with_overrides(spark_conf={"spark.executor.memory": "1g", AZURE_KEY: "old"})
    submit = plan_submit(spec_file, spec, mode=spec.mode, work_dir=tmp_path / "work", connector=Connector(jars=[jar]),
                         extra_conf={"spark.executor.memory": "2g", AZURE_KEY: "new-key"})
    assert submit.conf["spark.executor.memory"] == "2g"
    assert f"{AZURE_KEY}=new-key" in submit.properties_file.read_text()


def test_the_driver_token_reaches_the_driver_and_tags_the_yarn_application(spec_file: Path, tmp_path: Path) -> None:
    from airflow_provider_eos.core.driver import DRIVER_TOKEN_CONF

    token = "eos-orders-0123456789abcdef0123"
    planned = plan(spec_file, tmp_path, driver_token=token, extra_conf={"spark.yarn.tags": "team-a,nightly"})
    assert planned.conf[DRIVER_TOKEN_CONF] == token
    assert planned.conf["spark.yarn.tags"] == f"team-a,nightly,{token}"
    assert planned.properties_file is None, "the token is no secret: no private properties file for it"
    untagged = plan(spec_file, tmp_path)
    assert DRIVER_TOKEN_CONF not in untagged.conf and "spark.yarn.tags" not in untagged.conf


def test_the_spark_ui_the_metrics_turn_on_cannot_kill_stages_unless_the_user_says_so(spec_file, tmp_path, jar):
    spec = PipelineSpec.load(spec_file).with_overrides(metrics={"prometheus_port": 9464})

    def submitted(spec: PipelineSpec, **kwargs: object) -> dict[str, str]:
        planned = plan_submit(spec_file, spec, mode=spec.mode, work_dir=tmp_path / "work",
                              connector=Connector(jars=[jar]), **kwargs)
        return confs(planned.command("spark-submit", "local[2]"))

    (tmp_path / "work").mkdir()
    with_metrics = submitted(spec)
    assert with_metrics["spark.ui.enabled"] == "true"
    assert with_metrics["spark.ui.killEnabled"] == "false"
    # The user's own choice wins: in the spec's spark_conf, or in a properties file (--conf would override it).
    assert submitted(spec.with_overrides(spark_conf={"spark.ui.killEnabled": "true"}))["spark.ui.killEnabled"] == "true"
    given = tmp_path / "mine.properties"
    given.write_text("spark.ui.killEnabled true\n")
    assert "spark.ui.killEnabled" not in submitted(spec, properties_file=given)


@pytest.mark.parametrize(("master", "deploy_mode", "to_the_cluster"), [
    ("yarn", "cluster", {"spark.yarn.appMasterEnv.AWS_SECRET_ACCESS_KEY", "spark.yarn.appMasterEnv.SPARK_LOCAL_DIRS"}),
    ("yarn", "client", {"spark.yarn.appMasterEnv.SPARK_LOCAL_DIRS"}),
    ("k8s://https://kube:6443", "cluster", {"spark.kubernetes.driverEnv.AWS_SECRET_ACCESS_KEY",
                                           "spark.kubernetes.driverEnv.SPARK_LOCAL_DIRS"}),
    ("k8s://https://kube:6443", "client", set()),
    ("spark://m:7077", "client", set()),
])
def test_env_vars_reach_a_driver_on_the_cluster_through_the_private_file_only(
    spec_file, tmp_path, jar, master, deploy_mode, to_the_cluster
):
    """A client-mode driver is spark-submit's process (its environment); YARN's executor launcher takes SPARK*."""
    from airflow_provider_eos.spark.secret_conf import properties_keys

    (tmp_path / "work").mkdir()
    given = tmp_path / "mine.properties"
    given.write_text("spark.foo bar\n")
    secret = "aws-secret-0c9b4e"
    submit = plan(spec_file, tmp_path, connector=Connector(jars=[jar]), master=master, deploy_mode=deploy_mode,
                  properties_file=given, env_vars={"AWS_SECRET_ACCESS_KEY": secret, "SPARK_LOCAL_DIRS": "/data"})
    command = submit.command("spark-submit", master)
    assert not any(secret in arg for arg in command), command
    assert submit.environment()["AWS_SECRET_ACCESS_KEY"] == secret
    written = properties_keys(submit.properties_file) - {"spark.foo"}
    assert {key for key in written if key.endswith(("AWS_SECRET_ACCESS_KEY", "SPARK_LOCAL_DIRS"))} == to_the_cluster
    if to_the_cluster:
        assert submit.properties_file != given and oct(submit.properties_file.stat().st_mode & 0o777) == "0o600"
        assert "spark.foo bar" in submit.properties_file.read_text(), "the given properties file comes first"
    else:
        assert submit.properties_file == given
