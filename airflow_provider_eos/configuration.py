"""The deployment settings: an ``EOS_*`` environment variable or an option of Airflow's ``[eos]`` section.

Each setting is read through :func:`setting`, in this order:

1. the ``EOS_*`` environment variable (it wins: what a deployment set before the ``[eos]`` section
   existed keeps working, and one process can still be pointed elsewhere);
2. Airflow's configuration, ``[eos] <option>`` (``airflow.cfg`` or ``AIRFLOW__EOS__<OPTION>``);
3. the option's default.

Empty values count as unset. The options are declared once, here; :func:`provider_config` gives
them to Airflow (``get_provider_info()["config"]``), so ``airflow config list`` shows them with
their descriptions. This module imports no Airflow: the package root and the Spark executors
import it. A process that has Airflow loaded already (DAGs, operators, triggers) reads its
configuration; any other reads ``AIRFLOW__EOS__<OPTION>`` and the ``airflow.cfg`` file itself,
since importing Airflow there would configure Airflow's logging and could write a default
``airflow.cfg`` as a side effect of, say, ``eos devstack up``.
"""

from __future__ import annotations

import configparser
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["OPTIONS", "SECTION", "Option", "positive_seconds", "provider_config", "setting"]

SECTION = "eos"


@dataclass(frozen=True)
class Option:
    """One setting: its ``[eos]`` option, its environment variable, default and description."""

    key: str
    env: str
    description: str
    default: str = ""
    example: str | None = None
    version_added: str = "0.1.0"


OPTIONS: dict[str, Option] = {
    option.key: option
    for option in (
        Option("specs_dir", "EOS_SPECS_DIR",
               "The folder of the pipeline spec files the DAGs read (one YAML file per pipeline), also the "
               "default of `eos preflight --specs-dir` and `eos acls --specs-dir`. Empty: the `pipelines` "
               "folder next to the DAG files.", example="/opt/airflow/pipelines"),
        Option("home", "EOS_HOME",
               "Where the provider keeps its caches (the jars Maven resolves, the JVM executor writer built "
               "from a checkout) and the local devstack. Empty: ~/.cache/airflow-provider-eos.",
               example="/var/lib/eos"),
        Option("kafka_conn_id", "EOS_KAFKA_CONN_ID",
               "The Airflow `kafka` connection every role's tasks authenticate with, unless the role has its "
               "own (kafka_conn_id_job, _recovery, _health). Empty: the spec's own `kafka` settings.",
               example="kafka_eos"),
        Option("kafka_conn_id_job", "EOS_KAFKA_CONN_ID_JOB",
               "The `kafka` connection of the job role (pre-flight and the Spark job). Empty: kafka_conn_id.",
               example="kafka_eos_job"),
        Option("kafka_conn_id_recovery", "EOS_KAFKA_CONN_ID_RECOVERY",
               "The `kafka` connection of the recovery role (abort, verify, rewind, align). Empty: kafka_conn_id.",
               example="kafka_eos_recovery"),
        Option("kafka_conn_id_health", "EOS_KAFKA_CONN_ID_HEALTH",
               "The `kafka` connection of the health role (sensors, the scheduled health check). Empty: "
               "kafka_conn_id.", example="kafka_eos_health"),
        Option("spark_conn_id", "EOS_SPARK_CONN_ID",
               "The Airflow `spark` connection the pipelines' submit tasks use (each `eos_pipeline__<name>` DAG).",
               default="spark_default"),
        Option("queue_submit", "EOS_QUEUE_SUBMIT",
               "The executor queue of the pipelines' submit tasks (`submit`, `submit_stream` of each "
               "`eos_pipeline__<name>` DAG), e.g. a Celery queue of the workers that may run Spark drivers. "
               "Empty: Airflow's default queue.",
               example="spark-drivers"),
        Option("health_check_interval_s", "EOS_HEALTH_CHECK_INTERVAL_S",
               "Seconds between the three samples the scheduled health check (`eos_health_check`) takes of "
               "each pipeline; its lag trends compare them. A positive number.", default="10", example="30"),
        Option("queue_recovery", "EOS_QUEUE_RECOVERY",
               "The executor queue of the pipelines' recovery tasks (`stop_stream`, `confirm_driver_gone`, "
               "`recover_abort`, `recover_verify` of each `eos_pipeline__<name>` DAG). They judge the driver "
               "from whichever worker runs them (its lease, the cluster manager); empty: Airflow's default queue.",
               example="recovery"),
    )
}


def provider_config() -> dict[str, Any]:
    """The ``config`` entry of the provider info: the ``[eos]`` section as Airflow's providers declare theirs."""
    return {
        SECTION: {
            "description": "Settings of the exactly-once Kafka/Spark pipelines provider. An EOS_* environment "
            "variable of the same setting wins over the option (each option names its variable).",
            "options": {
                option.key: {
                    "description": f"{option.description} Environment variable (wins): {option.env}.",
                    "version_added": option.version_added,
                    "type": "string",
                    "example": option.example,
                    "default": option.default,
                }
                for option in OPTIONS.values()
            },
        }
    }


def _config_file() -> Path:
    home = Path(os.environ.get("AIRFLOW_HOME") or Path.home() / "airflow").expanduser()
    return Path(os.environ.get("AIRFLOW_CONFIG") or home / "airflow.cfg").expanduser()


def _from_airflow(key: str) -> str | None:
    if "airflow.configuration" in sys.modules or "airflow.sdk" in sys.modules:
        # Loaded already (a DAG, an operator, a trigger): its configuration, with every source it knows.
        from airflow.configuration import conf

        return conf.get(SECTION, key, fallback=None)
    # Elsewhere (the eos CLI, a Spark executor) Airflow is not imported for one option: importing it
    # configures its logging (kafka-python's INFO lines would then reach stdout) and may write a
    # default airflow.cfg. Its override variable, then its file, read as Airflow reads them (plain
    # values; the `_cmd` and `_secret` forms need Airflow loaded).
    override = os.environ.get(f"AIRFLOW__{SECTION.upper()}__{key.upper()}")
    if override:
        return override
    path = _config_file()
    if not path.is_file():
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path)
    except configparser.Error:
        return None  # Airflow itself would refuse this file; its own processes say so
    return parser.get(SECTION, key, fallback=None)


def setting(key: str) -> str | None:
    """The value of ``[eos] <key>``: its ``EOS_*`` variable, else Airflow's configuration, else the default.

    :returns: ``None`` when all three are empty.
    :raises KeyError: for a key that is not one of :data:`OPTIONS`.
    """
    option = OPTIONS[key]
    return os.environ.get(option.env) or _from_airflow(key) or option.default or None


def positive_seconds(key: str) -> float:
    """The value of ``[eos] <key>`` (:func:`setting`) as a positive number of seconds.

    :raises SettingError: when it is not one, naming the option, its variable and the value.
    """
    from airflow_provider_eos.core.errors import SettingError

    option = OPTIONS[key]
    value = setting(key) or ""  # setting() already falls back to the option's default
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not seconds > 0 or seconds == float("inf"):
        raise SettingError(f"[{SECTION}] {key} is {value!r}, not a positive number of seconds",
                           fix=f"set {option.env} or [{SECTION}] {key} to a positive number such as "
                               f"{option.default}, or leave both empty for the default ({option.default})")
    return seconds
