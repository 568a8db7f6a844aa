"""Submitting PySpark applications to the devstack's YARN in cluster deploy mode, and asking YARN about them.

Everything goes through what a user of a real cluster has: spark-submit with ``HADOOP_CONF_DIR``,
and the ResourceManager's REST API (``/ws/v1/cluster/apps``) for state, logs and killing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.devstack.jars import pyspark_jars_dir
from airflow_provider_eos.devstack.yarn import YarnClusterInfo

_APPLICATION_ID = re.compile(r"Submitted application (application_\d+_\d+)")
APP_STATE = RetryPolicy(waiting_for="the YARN application's state", timeout_s=240, first_delay_s=0.5, max_delay_s=1)
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


@dataclass(frozen=True)
class Submission:
    """One ``spark-submit --master yarn --deploy-mode cluster`` run."""

    application_id: str
    returncode: int
    output: str
    wall_s: float


def same_machine_conf(info: YarnClusterInfo) -> dict[str, str]:
    """Settings that let the single-machine devstack skip shipping what its one NodeManager already has.

    The NodeManager runs on this machine, so the driver and executors can run this interpreter
    (with PySpark and this package installed) and read Spark's jars in place (``local:``)
    instead of a 456 MB upload per submission.
    """
    return {
        **info.spark_conf,
        "spark.pyspark.python": sys.executable,
        "spark.yarn.jars": f"local:{pyspark_jars_dir()}/*",
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        "spark.executor.instances": "1",
        "spark.executor.cores": "1",
        "spark.ui.enabled": "false",
    }


def spark_submit(
    info: YarnClusterInfo, script: Path, *args: str, conf: dict[str, str | None] | None = None, wait: bool = True,
    timeout_s: float = 300,
) -> Submission:
    """spark-submit ``script`` in cluster deploy mode; ``wait=False`` returns once YARN accepted it.

    :param conf: ``--conf`` settings over :func:`same_machine_conf`; ``None`` drops one of those.
    """
    spark_home = pyspark_jars_dir().parent
    settings = {**same_machine_conf(info), "spark.yarn.submit.waitAppCompletion": str(wait).lower(), **(conf or {})}
    command = [str(spark_home / "bin" / "spark-submit"), "--master", "yarn", "--deploy-mode", "cluster",
               *(arg for key, value in settings.items() if value is not None for arg in ("--conf", f"{key}={value}")),
               str(script), *args]
    env = {**os.environ, "HADOOP_CONF_DIR": str(info.hadoop_conf_dir), "SPARK_HOME": str(spark_home)}
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout_s, check=False)
    output = result.stdout + result.stderr
    match = _APPLICATION_ID.search(output)
    assert match, f"spark-submit printed no application id (exit {result.returncode}):\n{output[-3000:]}"
    return Submission(match.group(1), result.returncode, output, time.monotonic() - started)


def _request(url: str, method: str = "GET", body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def application(info: YarnClusterInfo, application_id: str) -> dict:
    """The ResourceManager's report of one application (``/ws/v1/cluster/apps/{id}``)."""
    return _request(f"{info.resourcemanager_url}/ws/v1/cluster/apps/{application_id}")["app"]


def wait_for_state(info: YarnClusterInfo, application_id: str, states: tuple[str, ...]) -> dict:
    """Poll the REST API until the application is in one of ``states``; the last report either way."""
    waited = APP_STATE.poll(
        lambda: application(info, application_id), until=lambda app: app["state"] in states,
        what=f"{application_id} to reach {states}",
    )
    return waited.value


def kill(info: YarnClusterInfo, application_id: str) -> str:
    """``yarn application -kill`` through the REST API; the state the ResourceManager answers.

    The answer is 202 with the application's state at that moment while the kill is in progress
    (RUNNING, until the ResourceManager has handled the kill event), 200 with KILLED once done.
    """
    url = f"{info.resourcemanager_url}/ws/v1/cluster/apps/{application_id}/state"
    return _request(url, "PUT", {"state": "KILLED"})["state"]


def container_log(app: dict, name: str = "stdout") -> str:
    """A log of the application master's container (the driver, in cluster deploy mode), from its NodeManager."""
    with urllib.request.urlopen(f"{app['amContainerLogs']}/{name}/?start=0", timeout=10) as response:
        return response.read().decode(errors="replace")


def processes_of(application_id: str) -> list[int]:
    """Pids whose command line names the application (its containers' launch scripts and JVMs)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if application_id.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def listening_addresses(pids: list[int]) -> list[str]:
    """``address:port`` of every TCP socket the processes listen on (from ``ss``)."""
    wanted = {f"pid={pid}," for pid in pids}
    lines = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout.splitlines()
    return [line.split()[3] for line in lines if any(marker in line for marker in wanted)]
