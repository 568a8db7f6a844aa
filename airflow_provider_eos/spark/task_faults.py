"""Test-only fault injection inside the executor writers' tasks (DESIGN.md 2b crash points).

Armed exactly like :mod:`.faults` (both ``EOS_FAULT_INJECTION`` and ``EOS_FAULT_INJECTION_ACK``,
and here also ``EOS_FAULT_REPORT``), with a setting ``<point>@<batch>:<kafka partition>``:

- ``task_after_produce``: the task's Python worker is SIGKILLed after producing its rows and
  before its commit (the next attempt's ``init_transactions`` aborts the open transaction);
- ``task_after_commit``: SIGKILLed after the commit and before the task reports (the retry finds
  marker N and skips);
- ``task_kill_driver``: after its commit, the task SIGKILLs the driver (the Python driver and the
  spark-submit JVM, whose pids the driver handed to the task), leaving other partitions uncommitted;
- ``task_stall``: the task sleeps 20 s before its commit (once), so speculation starts a second attempt.

A task fault fires once across every process of the run: the first to create
``<EOS_FAULT_REPORT>.<point>.fired`` (``O_EXCL``) fires; a retried task, which runs in a new
Python worker, finds the file and passes.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from enum import StrEnum

from airflow_provider_eos.spark.faults import ACK_VALUE

__all__ = ["TaskFaultPoint", "TaskFaults"]

_STALL_S = 20


class TaskFaultPoint(StrEnum):
    TASK_AFTER_PRODUCE = "task_after_produce"
    TASK_AFTER_COMMIT = "task_after_commit"
    TASK_KILL_DRIVER = "task_kill_driver"
    TASK_STALL = "task_stall"


class TaskFaults:
    """The task's fault points; inert unless the environment armed one (see the module)."""

    def __init__(self, point: TaskFaultPoint | None = None, batch_id: int = -1, partition: int = -1,
                 report: str | None = None, driver_pids: tuple[int, ...] = ()) -> None:
        self.point, self.batch_id, self.partition = point, batch_id, partition
        self.report, self.driver_pids = report, driver_pids

    @staticmethod
    def from_environment(driver_pids: tuple[int, ...] = ()) -> TaskFaults:
        """Read on the driver and shipped with the task, so executors need no environment of their own."""
        setting = os.environ.get("EOS_FAULT_INJECTION", "")
        report = os.environ.get("EOS_FAULT_REPORT")
        if os.environ.get("EOS_FAULT_INJECTION_ACK") != ACK_VALUE or not report or not setting.startswith("task_"):
            return TaskFaults()
        point, _, where = setting.partition("@")
        batch, _, partition = where.partition(":")
        return TaskFaults(TaskFaultPoint(point), int(batch), int(partition), report, driver_pids)

    def hit(self, point: TaskFaultPoint, batch_id: int, partition: int) -> None:
        """Reached ``point`` for Kafka partition ``partition`` of batch ``batch_id``."""
        if self.point is not point or self.batch_id != batch_id or self.partition != partition or not self._claim():
            return
        message = f"EOS-FAULT fired: {point.value} batch {batch_id} partition {partition} pid {os.getpid()}"
        self._write_report(message)
        if point is TaskFaultPoint.TASK_STALL:
            time.sleep(_STALL_S)
            return
        if point is TaskFaultPoint.TASK_KILL_DRIVER:
            for pid in self.driver_pids:
                os.kill(pid, signal.SIGKILL)
            return
        os.kill(os.getpid(), signal.SIGKILL)

    def _claim(self) -> bool:
        try:
            os.close(os.open(f"{self.report}.{self.point}.fired", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            return False
        return True

    def _write_report(self, message: str) -> None:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
        with open(str(self.report), "a") as out:
            out.write(message + "\n")
            out.flush()
            os.fsync(out.fileno())
