"""Test-only fault injection: the sink plug-in (``EOS_SINK_PLUGIN``) the crash tests, the soak and the bench arm.

The product's sink only announces its points (:mod:`airflow_provider_eos.spark.sink_points`); this
plug-in decides what happens there: the driver's faults (:mod:`.driver`: SIGKILL of the driver at a
:class:`~airflow_provider_eos.spark.sink_points.SinkPoint`, a stall past the transaction timeout)
and the tasks' (:mod:`.tasks`). A job is armed by :func:`arming_env`'s variables: the plug-in's name,
the fault ``EOS_FAULT_INJECTION=<point>@<batch>[:<partition>]``, its acknowledgement and, for the
driver to import this package, the repository root on ``PYTHONPATH``.

The tasks' faults are pickled with the tasks by value (cloudpickle), so an executor that cannot
import ``tests`` (a standalone worker started without the repository on its path) still runs them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_eos.spark.sink_points import ACK_ENV, ACK_VALUE, ARMING_ENV, PLUGIN_ENV, SinkObserver, SinkPlugin
from tests.support.faults.driver import FaultInjector
from tests.support.faults.tasks import TaskFaults

if TYPE_CHECKING:
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.spark.sink_points import SinkPoint, TaskObserver

__all__ = ["ACK_VALUE", "PLUGIN", "FaultPlugin", "arming_env", "disarmed", "plugin"]

#: ``EOS_SINK_PLUGIN`` of this plug-in.
PLUGIN = f"{__name__}:plugin"
#: The variables that arm a job (and that a job started without a fault must not inherit).
ARMING_VARIABLES = (PLUGIN_ENV, ARMING_ENV, ACK_ENV, "EOS_FAULT_REPORT")
_REPO_ROOT = Path(__file__).resolve().parents[3]


def arming_env(fault: str, report: str | Path | None = None, pythonpath: str | None = None) -> dict[str, str]:
    """The environment that arms ``fault`` (``<point>@<batch>[:<partition>]``) in a job started with it.

    :param report: a file the ``EOS-FAULT`` lines are appended to (it survives the kill).
    :param pythonpath: the ``PYTHONPATH`` to extend (default: this process's); the repository root goes first.
    """
    path = pythonpath if pythonpath is not None else os.environ.get("PYTHONPATH", "")
    entries = [str(_REPO_ROOT), *(entry for entry in path.split(os.pathsep) if entry and entry != str(_REPO_ROOT))]
    env = {PLUGIN_ENV: PLUGIN, ARMING_ENV: fault, ACK_ENV: ACK_VALUE, "PYTHONPATH": os.pathsep.join(entries)}
    if report is not None:
        env["EOS_FAULT_REPORT"] = str(report)
    return env


def disarmed(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the variables that arm a fault."""
    return {name: value for name, value in env.items() if name not in ARMING_VARIABLES}


class _DriverFaults(SinkObserver):
    """The driver's injector for the driver's points; the tasks' faults for theirs, read once per batch."""

    def __init__(self, driver: FaultInjector, transaction_timeout_ms: int) -> None:
        self.driver, self.transaction_timeout_ms = driver, transaction_timeout_ms

    def hit(self, point: SinkPoint, batch_id: int) -> None:
        self.driver.hit(point, batch_id)

    def for_tasks(self) -> TaskObserver:
        # The driver's pids (the Python driver, the spark-submit JVM) for the faults that kill the driver.
        return TaskFaults.from_environment((os.getpid(), os.getppid()), self.transaction_timeout_ms)


class FaultPlugin(SinkPlugin):
    """The faults ``EOS_FAULT_INJECTION`` names; inert without it (or without its acknowledgement)."""

    def observer(self, spec: PipelineSpec) -> SinkObserver:
        _pickle_tasks_by_value()
        return _DriverFaults(FaultInjector.from_environment(spec.transaction_timeout_ms), spec.transaction_timeout_ms)


def plugin() -> FaultPlugin:
    """The factory ``EOS_SINK_PLUGIN`` names (:data:`PLUGIN`)."""
    return FaultPlugin()


def _pickle_tasks_by_value() -> None:
    try:
        from pyspark import cloudpickle
    except ImportError:  # no Spark here: nothing ships tasks
        return
    cloudpickle.register_pickle_by_value(sys.modules[TaskFaults.__module__])
