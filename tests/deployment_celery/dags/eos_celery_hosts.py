"""Test DAGs of the Celery deployment: what host a task ran on, and a long task to kill its worker under.

Each task returns what identifies its host as the task sees it: the hostname (its UTS
namespace), Airflow's hostname (``[core] hostname_callable``), its pid and pid namespace.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import dag, get_current_context, task


def host_facts() -> dict[str, Any]:
    from airflow.utils.net import get_hostname  # what Airflow records as the task instance's hostname

    return {"hostname": socket.gethostname(), "airflow_hostname": get_hostname(), "pid": os.getpid(),
            "pid_namespace": os.readlink("/proc/self/ns/pid"), "uts_namespace": os.readlink("/proc/self/ns/uts"),
            "worker": os.environ.get("EOS_CELERY_WORKER"), "cwd": os.getcwd()}


@dag(dag_id="eos_celery_hosts", schedule=None, start_date=datetime(2026, 1, 1), catchup=False)
def eos_celery_hosts() -> None:
    @task(queue="worker-1")
    def on_worker_1() -> dict[str, Any]:
        return host_facts()

    @task(queue="worker-2")
    def on_worker_2() -> dict[str, Any]:
        return host_facts()

    on_worker_1()
    on_worker_2()


@dag(dag_id="eos_celery_long", schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
     params={"facts_file": "", "seconds": 30})
def eos_celery_long() -> None:
    @task(queue="worker-2", retries=1, retry_delay=timedelta(seconds=2))
    def long_on_worker_2() -> dict[str, Any]:
        """First try: start a detached child (a Spark driver's stand-in), say where, then run for a while.
        A retry returns at once."""
        context = get_current_context()
        if context["ti"].try_number > 1:
            return host_facts()
        params = context["params"]
        child = subprocess.Popen(["sleep", "600"], start_new_session=True)
        facts = {**host_facts(), "child_pid": child.pid}
        Path(params["facts_file"]).write_text(json.dumps(facts))
        time.sleep(float(params["seconds"]))
        return facts

    long_on_worker_2()


eos_celery_hosts()
eos_celery_long()
