"""The ``[eos]`` section: each ``EOS_*`` variable wins over its option, the option over the default.

Airflow's configuration reads ``AIRFLOW__EOS__<OPTION>`` like a line of ``airflow.cfg``, so the
tests set options that way; the provider's declaration is checked against Airflow's own schema.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from airflow_provider_eos import get_provider_info
from airflow_provider_eos.configuration import OPTIONS, SECTION, setting
from airflow_provider_eos.devstack.jars import eos_home
from airflow_provider_eos.role_connections import kafka_conn_id
from airflow_provider_eos.spec_registry import configured_specs_directory


@pytest.fixture(autouse=True)
def _no_settings(monkeypatch):
    import airflow.configuration  # noqa: F401  (loaded, as in a DAG or a task: the options are read through it)

    for option in OPTIONS.values():
        monkeypatch.delenv(option.env, raising=False)
        monkeypatch.delenv(f"AIRFLOW__EOS__{option.key.upper()}", raising=False)


def test_the_variable_wins_over_the_option_which_wins_over_the_default(monkeypatch, tmp_path):
    assert setting("spark_conn_id") == "spark_default" and setting("specs_dir") is None
    monkeypatch.setenv("AIRFLOW__EOS__SPECS_DIR", str(tmp_path / "from-config"))
    assert configured_specs_directory() == (tmp_path / "from-config").resolve()
    monkeypatch.setenv("EOS_SPECS_DIR", str(tmp_path / "from-env"))
    assert configured_specs_directory() == (tmp_path / "from-env").resolve()
    monkeypatch.setenv("EOS_SPECS_DIR", "")  # empty counts as unset
    assert configured_specs_directory() == (tmp_path / "from-config").resolve()


def test_home_and_connections_read_the_same_options(monkeypatch, tmp_path):
    monkeypatch.setenv("AIRFLOW__EOS__HOME", str(tmp_path / "home"))
    assert eos_home() == tmp_path / "home"
    monkeypatch.setenv("AIRFLOW__EOS__KAFKA_CONN_ID", "shared")
    monkeypatch.setenv("AIRFLOW__EOS__KAFKA_CONN_ID_HEALTH", "health_option")
    assert (kafka_conn_id("job"), kafka_conn_id("health")) == ("shared", "health_option")
    # The role's own variable, then the role's option, then the shared variable, then the shared option.
    monkeypatch.setenv("EOS_KAFKA_CONN_ID", "shared_env")
    assert (kafka_conn_id("job"), kafka_conn_id("health")) == ("shared_env", "health_option")
    monkeypatch.setenv("EOS_KAFKA_CONN_ID_HEALTH", "health_env")
    assert kafka_conn_id("health") == "health_env"


def test_without_airflow_loaded_nor_a_config_file_no_airflow_cfg_is_written(monkeypatch, tmp_path):
    import subprocess
    import sys

    code = ("import sys; from airflow_provider_eos.configuration import setting; "
            "print(setting('specs_dir'), setting('spark_conn_id'), 'airflow' in sys.modules)")
    env = {"PATH": "/usr/bin:/bin", "AIRFLOW_HOME": str(tmp_path), "AIRFLOW__EOS__SPECS_DIR": "/specs",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.stdout.split() == ["/specs", "spark_default", "False"], result.stderr
    assert not list(tmp_path.iterdir())


def test_without_airflow_loaded_the_config_file_is_read_without_importing_airflow(tmp_path):
    """The eos CLI reads the [eos] options from airflow.cfg itself: importing Airflow there would
    configure Airflow's logging, and client INFO lines would reach the command's stdout."""
    import subprocess
    import sys

    (tmp_path / "airflow.cfg").write_text("[core]\nload_examples = False\n\n[eos]\nspecs_dir = /from-file\n")
    code = ("import sys; from airflow_provider_eos.configuration import setting; "
            "print(setting('specs_dir'), setting('home'), 'airflow' in sys.modules)")
    env = {"PATH": "/usr/bin:/bin", "AIRFLOW_HOME": str(tmp_path),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.stdout.split() == ["/from-file", "None", "False"], result.stderr
    env["AIRFLOW__EOS__SPECS_DIR"] = "/from-override"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.stdout.split()[0] == "/from-override", result.stderr


def test_the_provider_declares_the_section_as_airflow_s_schema_wants():
    import airflow
    import jsonschema

    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    options = info["config"][SECTION]["options"]
    assert set(options) == set(OPTIONS)
    for key, option in OPTIONS.items():
        assert option.env in options[key]["description"], key
        assert options[key]["default"] == option.default


def test_the_pipeline_dag_puts_its_submit_and_recovery_tasks_on_the_configured_queues(monkeypatch, tmp_path):
    from airflow_provider_eos.dags.pipeline import pipeline_dags

    shutil.copy(Path(__file__).parents[2] / "dags" / "pipelines" / "orders_enrich.yaml", tmp_path)
    monkeypatch.setenv("AIRFLOW__EOS__QUEUE_SUBMIT", "drivers")
    monkeypatch.setenv("EOS_QUEUE_RECOVERY", "recovery")
    (dag,) = pipeline_dags(tmp_path).values()
    queues = {task.task_id: task.queue for task in dag.tasks}
    default = queues["preflight"]
    assert default not in ("drivers", "recovery")
    assert {t: q for t, q in queues.items() if q != default} == {
        "submit": "drivers", "submit_stream": "drivers", "stop_stream": "recovery",
        "confirm_driver_gone": "recovery", "recover_abort": "recovery", "recover_verify": "recovery"}
    monkeypatch.delenv("AIRFLOW__EOS__QUEUE_SUBMIT")
    monkeypatch.delenv("EOS_QUEUE_RECOVERY")
    (dag,) = pipeline_dags(tmp_path).values()
    assert {task.queue for task in dag.tasks} == {default}  # empty: the default queue


def test_the_health_check_samples_its_pipelines_the_configured_seconds_apart(monkeypatch, tmp_path):
    from airflow_provider_eos.core.errors import SettingError
    from airflow_provider_eos.dags.health_check import health_check_dag

    shutil.copy(Path(__file__).parents[2] / "dags" / "pipelines" / "orders_enrich.yaml", tmp_path)

    def sampling() -> tuple[int, float]:
        task = health_check_dag(tmp_path).get_task("health_report")
        return task.partial_kwargs["samples"], task.partial_kwargs["interval_s"]

    assert sampling() == (3, 10.0)  # the default: three samples 10 s apart
    monkeypatch.setenv("AIRFLOW__EOS__HEALTH_CHECK_INTERVAL_S", "30")
    assert sampling() == (3, 30.0)
    monkeypatch.setenv("EOS_HEALTH_CHECK_INTERVAL_S", "1.5")
    assert sampling() == (3, 1.5)
    for wrong in ("0", "-2", "ten", "nan", "inf"):
        monkeypatch.setenv("EOS_HEALTH_CHECK_INTERVAL_S", wrong)
        with pytest.raises(SettingError, match=rf"\[eos\] health_check_interval_s is '{wrong}', not a positive") as err:
            sampling()
        assert "EOS_HEALTH_CHECK_INTERVAL_S" in err.value.fix
