"""The stop of a killed submit task's driver, in a process that outlives the task.

Airflow gives a killed task seconds between its SIGTERM and its SIGKILL (and signals the task's
whole process group): too short to wait out a driver's running batch. The task's ``on_kill``
sends SIGTERM itself and hands the rest to this process, started in a session of its own: it runs
the same :func:`~airflow_provider_eos.spark.driver_processes.stop_driver` as the recovery
branch's deliberate stop, scoped to the process group of the task's own spark-submit (the run's
next attempt carries the same token and is not the killed task's), so a driver stuck in a batch
is SIGKILLed with its group once the grace period is over. It ends when the group is gone.

``python -m airflow_provider_eos.spark.detached_stop --handle JSON --group PGID --grace-s S``
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys

from airflow_provider_eos.core.driver import DriverHandle
from airflow_provider_eos.core.submit_environment import submit_environment
from airflow_provider_eos.spark.driver_processes import stop_driver

__all__ = ["hand_over_stop"]

log = logging.getLogger(__name__)

#: How long the processes have to vanish after SIGKILL before the stop reports them still there.
KILL_WAIT_S = 30.0


def hand_over_stop(handle: DriverHandle, *, group: int, grace_s: float) -> int:
    """Start the detached stop of ``handle``'s driver in process group ``group``; returns its pid at once.

    Its standard streams go nowhere: holding the task's log pipes open would keep Airflow waiting
    for the killed task's output to end. Its environment is the allow-list: nothing of the worker's
    secrets.
    """
    command = [sys.executable, "-m", __name__, "--handle", handle.model_dump_json(), "--group", str(group),
               "--grace-s", str(grace_s)]
    process = subprocess.Popen(command, start_new_session=True, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=submit_environment(os.environ))
    return process.pid


def main(argv: list[str] | None = None) -> int:
    """Stop the driver; exit 0 once its group is gone, 1 when it is not (or cannot be seen)."""
    parser = argparse.ArgumentParser(description="stop a killed submit task's driver after a grace period")
    parser.add_argument("--handle", required=True, help="the driver handle (JSON, the XCom `driver`)")
    parser.add_argument("--group", required=True, type=int, help="the process group of the task's spark-submit")
    parser.add_argument("--grace-s", required=True, type=float, help="how long the driver may take after SIGTERM")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    seen = stop_driver(DriverHandle.model_validate_json(args.handle), grace_s=args.grace_s, kill_wait_s=KILL_WAIT_S,
                       group=args.group)
    log.info("%s: %s", seen.liveness.value, seen.evidence)
    return 0 if seen.gone else 1


if __name__ == "__main__":
    sys.exit(main())
