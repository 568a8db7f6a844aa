"""Faults inside the write tasks, at the points they announce (``sink_points.TaskPoint``).

Armed exactly like :mod:`.driver` (both ``EOS_FAULT_INJECTION`` and ``EOS_FAULT_INJECTION_ACK``),
read on the driver and shipped with the task, with a setting ``<point>@<batch>:<kafka partition>``:

- ``task_after_produce``: the task's Python worker is SIGKILLed after producing its rows and
  before its commit (the next attempt's ``init_transactions`` aborts the open transaction);
- ``task_after_commit``: SIGKILLed after the commit and before the task reports (the retry finds
  marker N and skips);
- ``task_kill_driver``: after its commit, the task SIGKILLs the driver (the Python driver and the
  spark-submit JVM, whose pids the driver handed to the task), leaving other partitions uncommitted;
- ``task_stall``: the task sleeps 20 s before its commit (once), so speculation starts a second attempt.

The driver writer's points keep their meaning under executor writers, so one fault vocabulary
serves both (the demo, the DAG tests and the chaos tests use it): ``after_produce@N`` makes the
first task of batch N to get there SIGKILL the driver after producing and before its commit
(the driver dies with transactions open, as a driver crash mid-batch leaves them), and
``slow_transaction@N`` stalls that task past ``transaction.timeout.ms`` before its commit.
(``before_produce`` and ``after_kafka_commit`` fire on the driver, around the tasks.)

The JVM executor writer (``executor_writer: jvm``) announces the same points to a ``TaskObserver.java``;
this plug-in's JVM half (``jvm/src/test``: ``FaultingTaskObserver.java``, in the module's test jar, never in
the product's) is armed by the same environment through :meth:`TaskFaults.armed`, named in the write's
plan by :meth:`TaskFaults.jvm_plan`, and its jar added for the executors by the driver. Its worker is the executor JVM
(in local mode the driver's): a "killed worker" there is the task attempt dying as a crash leaves
it, its producer closed without ending its transaction.

A task fault fires once across every process of the run: the first to create its claim file
(``O_EXCL``, named after the driver's pid) fires; a retried task, which runs in a new Python
worker, finds the file and passes. ``EOS_FAULT_REPORT`` also gets the ``EOS-FAULT`` line.

Which fault fires at which of the tasks' points: :data:`FAULTS_AT`. ``task_after_produce`` fires in
the driver writer's spill tasks too (after the file is complete, before the task reports), so a
whole file of a killed attempt lies next to the retry's.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from enum import StrEnum

from airflow_provider_eos.devstack.jars import EXECUTOR_WRITER_TEST_JAR, eos_home
from airflow_provider_eos.spark.sink_points import ACK_VALUE, TaskObserver, TaskPoint

__all__ = ["FAULTS_AT", "TaskFaultPoint", "TaskFaults"]

_STALL_S = 20
#: The JVM half of these faults, in the writer module's test jar (``make install`` builds it beside the writer's jar).
JVM_OBSERVER = "io.github.airflowprovidereos.writer.FaultingTaskObserver"
#: A partition setting that lets the first task of the batch to reach the point fire.
ANY_PARTITION = -1


class TaskFaultPoint(StrEnum):
    TASK_AFTER_PRODUCE = "task_after_produce"
    TASK_AFTER_COMMIT = "task_after_commit"
    TASK_KILL_DRIVER = "task_kill_driver"
    TASK_STALL = "task_stall"
    #: ``after_produce`` of the driver writer, under executor writers (same name, so logs read the same).
    KILL_DRIVER_BEFORE_COMMIT = "after_produce"
    #: ``slow_transaction`` of the driver writer, under executor writers.
    SLOW_TRANSACTION = "slow_transaction"


#: The driver writer's points that fire inside a task under executor writers.
_FORWARDED = {"after_produce": TaskFaultPoint.KILL_DRIVER_BEFORE_COMMIT,
              "slow_transaction": TaskFaultPoint.SLOW_TRANSACTION}


#: The faults that may fire at each point a task announces, in the order they are tried (one is armed).
FAULTS_AT = {
    TaskPoint.TASK_AFTER_PRODUCE: (TaskFaultPoint.TASK_STALL, TaskFaultPoint.SLOW_TRANSACTION,
                                   TaskFaultPoint.KILL_DRIVER_BEFORE_COMMIT, TaskFaultPoint.TASK_AFTER_PRODUCE),
    TaskPoint.TASK_AFTER_COMMIT: (TaskFaultPoint.TASK_AFTER_COMMIT, TaskFaultPoint.TASK_KILL_DRIVER),
    TaskPoint.TASK_AFTER_SPILL: (TaskFaultPoint.TASK_AFTER_PRODUCE,),
}


class TaskFaults(TaskObserver):
    """The task's fault points; inert unless the environment armed one (see the module)."""

    def __init__(self, point: TaskFaultPoint | None = None, batch_id: int = -1, partition: int = ANY_PARTITION,
                 report: str | None = None, driver_pids: tuple[int, ...] = (), stall_s: float = _STALL_S) -> None:
        self.point, self.batch_id, self.partition = point, batch_id, partition
        self.report, self.driver_pids, self.stall_s = report, driver_pids, stall_s

    @staticmethod
    def from_environment(driver_pids: tuple[int, ...] = (), transaction_timeout_ms: int = 60_000) -> TaskFaults:
        """Read on the driver and shipped with the task, so executors need no environment of their own."""
        setting = os.environ.get("EOS_FAULT_INJECTION", "")
        if os.environ.get("EOS_FAULT_INJECTION_ACK") != ACK_VALUE or "@" not in setting:
            return TaskFaults()
        name, _, where = setting.partition("@")
        batch, _, partition = where.partition(":")
        report = os.environ.get("EOS_FAULT_REPORT")
        if name in _FORWARDED:
            # Past the timeout by more than the broker's abort interval, as the driver writer's stall.
            return TaskFaults(_FORWARDED[name], int(batch), ANY_PARTITION, report, driver_pids,
                              stall_s=transaction_timeout_ms / 1000 + 8)
        if not name.startswith("task_"):
            return TaskFaults()
        return TaskFaults(TaskFaultPoint(name), int(batch), int(partition or ANY_PARTITION), report, driver_pids)

    def armed(self) -> dict | None:
        """What is armed, for the JVM writer's same points (``jvm/``, ``TaskFaults.java``); ``None``: nothing.

        The claim folder is the driver's temporary folder: the Python points claim in the worker's,
        which on one host (every test and the local masters) is the same.
        """
        if self.point is None:
            return None
        return {"point": self.point.value, "batch_id": self.batch_id, "partition": self.partition,
                "report": self.report, "driver_pids": list(self.driver_pids), "stall_s": self.stall_s,
                "claim_dir": tempfile.gettempdir()}

    def jvm_plan(self) -> dict | None:
        """The JVM half of the same points (``jvm/src/test``: ``FaultingTaskObserver.java``), when armed."""
        armed = self.armed()
        if armed is None:
            return None
        jar = eos_home() / "jars" / "eos-executor-writer" / EXECUTOR_WRITER_TEST_JAR
        return {"class": JVM_OBSERVER, "config": armed, "jar": str(jar)}

    def reached(self, point: TaskPoint, batch_id: int, partition: int) -> None:
        for fault in FAULTS_AT[point]:
            self.hit(fault, batch_id, partition)

    def hit(self, point: TaskFaultPoint, batch_id: int, partition: int) -> None:
        """Reached ``point`` for Kafka partition ``partition`` of batch ``batch_id``."""
        if self.point is not point or self.batch_id != batch_id:
            return
        if self.partition not in (ANY_PARTITION, partition) or not self._claim():
            return
        if point in (TaskFaultPoint.TASK_STALL, TaskFaultPoint.SLOW_TRANSACTION):
            self._report(f"EOS-FAULT fired: {point.value} batch {batch_id} partition {partition}, "
                         f"stalling {self.stall_s:.0f}s in Python worker {os.getpid()}")
            time.sleep(self.stall_s)
            return
        if point in (TaskFaultPoint.TASK_KILL_DRIVER, TaskFaultPoint.KILL_DRIVER_BEFORE_COMMIT):
            self._report(f"EOS-FAULT fired: {point.value} batch {batch_id} partition {partition}, killing the driver")
            # The task's own worker goes too, as on a driver host that crashed: left alive it would
            # commit the transaction the crash is meant to leave open.
            for pid in (*self.driver_pids, os.getpid()):
                os.kill(pid, signal.SIGKILL)
            return
        self._report(f"EOS-FAULT fired: {point.value} batch {batch_id} partition {partition}, "
                     f"killing Python worker {os.getpid()}")
        os.kill(os.getpid(), signal.SIGKILL)

    def _claim(self) -> bool:
        owner = self.driver_pids[0] if self.driver_pids else os.getppid()
        claim = os.path.join(tempfile.gettempdir(), f"eos-fault-{owner}-{self.point}-{self.batch_id}.fired")
        try:
            os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            return False
        return True

    def _report(self, message: str) -> None:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
        if not self.report:
            return
        with open(self.report, "a") as out:
            out.write(message + "\n")
            out.flush()
            os.fsync(out.fileno())
