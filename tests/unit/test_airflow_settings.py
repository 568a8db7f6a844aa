"""The devstack Airflow deployment's settings and state (pure): what every component is started with."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_eos.devstack.airflow_settings import (
    AirflowDaemon,
    AirflowDeploymentInfo,
    airflow_environment,
    devstack_connections,
)


def _info(tmp_path: Path) -> AirflowDeploymentInfo:
    return AirflowDeploymentInfo(port=4321, airflow_home=str(tmp_path / "home"), dags_folder="/repo/dags",
                                 specs_dir=str(tmp_path / "pipelines"), password_file=str(tmp_path / "pw.json"),
                                 daemons=[])


def test_the_deployment_is_a_small_production_airflow_bound_to_loopback(tmp_path: Path) -> None:
    env = airflow_environment(_info(tmp_path), jwt_secret="j", fernet_key="f")

    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1" and env["AIRFLOW__API__PORT"] == "4321"
    # Tasks reach the execution API on the same api-server.
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:4321/execution/"
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == f"sqlite:///{tmp_path / 'home' / 'airflow.db'}"
    assert env["EOS_SPECS_DIR"] == str(tmp_path / "pipelines")
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    assert env["AIRFLOW__API_AUTH__JWT_SECRET"] == "j" and env["AIRFLOW__CORE__FERNET_KEY"] == "f"


def test_a_parsed_dag_reaches_the_api_within_seconds(tmp_path: Path) -> None:
    """A new spec shows in the forms at the parse it asks for (deploy_spec, the README's touch): Airflow's 30 s
    write throttle had it wait for a later parse, and its api-server served the cached DAG as long."""
    env = airflow_environment(_info(tmp_path), jwt_secret="j", fernet_key="f")

    assert int(env["AIRFLOW__CORE__MIN_SERIALIZED_DAG_UPDATE_INTERVAL"]) <= 5
    # ... while each file's own parse stays as cheap as before (an idle deployment).
    assert env["AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL"] == "30"


def test_the_password_is_read_from_the_private_file_not_recorded(tmp_path: Path) -> None:
    info = _info(tmp_path)
    Path(info.password_file).write_text('{"admin": "s3cret"}')

    assert info.password() == "s3cret"
    assert "s3cret" not in info.model_dump_json()


def test_the_api_server_is_recognised_before_and_after_it_retitles_itself() -> None:
    daemon = AirflowDaemon(component="api-server", pid=1, log_file="x")

    assert "airflow\0api-server" in daemon.marker
    assert any(m in "airflow api_server -- host:127.0.0.1 port:4321" for m in daemon.marker)


def test_connections_for_the_devstack() -> None:
    assert devstack_connections("127.0.0.1:9092", "spark://127.0.0.1:7077") == {
        "spark_default": {"conn_type": "spark", "host": "spark://127.0.0.1:7077"},
        "kafka_default": {"conn_type": "kafka", "extra": {"bootstrap.servers": "127.0.0.1:9092"}},
    }
    assert set(devstack_connections(None, "local[2]")) == {"spark_default"}
