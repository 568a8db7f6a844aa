"""The driver's faults at the sink's points (:class:`~airflow_provider_eos.spark.sink_points.SinkPoint`).

The sink announces each point to its observer; the fault plug-in's (:mod:`tests.support.faults`)
is the inert :class:`FaultInjector`, whose ``hit`` does nothing, unless
:meth:`FaultInjector.from_environment` found BOTH ``EOS_FAULT_INJECTION=<point>@<batch>`` and
``EOS_FAULT_INJECTION_ACK=kill-this-driver``, so no single stray variable can kill a driver. Only
then is the armed injector (a private class) built. When it fires it logs ``EOS-FAULT`` and
SIGKILLs the driver and its parent, the spark-submit JVM (in client mode the Python driver is the
JVM's child), which is what a real crash of the driver host looks like. Only those two: whatever
launched spark-submit (``eos run``, an Airflow worker, a test) survives to see the crash.
``EOS_FAULT_REPORT=<file>`` also appends that line to a file, which survives the kill.
"""

from __future__ import annotations

import logging
import os
import signal
import time

from airflow_provider_eos.spark.sink_points import ACK_VALUE, BatchPoints, SinkObserver, SinkPoint

__all__ = ["ACK_VALUE", "BatchFaults", "FaultInjector", "FaultPoint"]

log = logging.getLogger(__name__)

#: The driver's fault names are the sink's point names: ``after_produce@2`` fires at :attr:`SinkPoint.AFTER_PRODUCE`.
FaultPoint = SinkPoint
#: A batch's points, as the sink holds them.
BatchFaults = BatchPoints


class FaultInjector(SinkObserver):
    """The inert injector: every point passes. What every sink holds unless a test armed one."""

    @staticmethod
    def from_environment(transaction_timeout_ms: int) -> FaultInjector:
        """The injector the environment asks for: inert unless both variables are set (see the module)."""
        setting = os.environ.get("EOS_FAULT_INJECTION")
        if not setting or os.environ.get("EOS_FAULT_INJECTION_ACK") != ACK_VALUE:
            return FaultInjector()
        point, _, batch = setting.partition("@")
        if point.startswith("task_"):  # fires inside the executor writers' tasks (see .tasks)
            return FaultInjector()
        log.warning("EOS-FAULT armed: %s at batch %s (test only)", point, batch)
        # A slow batch outlives the transaction timeout by a margin larger than the broker's abort interval.
        return _ArmedFaultInjector(FaultPoint(point), int(batch), stall_s=transaction_timeout_ms / 1000 + 8)


class _ArmedFaultInjector(FaultInjector):
    """Fires at most once per process, at ``point`` of batch ``batch_id``."""

    def __init__(self, point: FaultPoint, batch_id: int, stall_s: float) -> None:
        self.point: FaultPoint | None = point
        self.batch_id, self.stall_s = batch_id, stall_s

    def hit(self, point: FaultPoint, batch_id: int) -> None:
        if self.point is not point or self.batch_id != batch_id:
            return
        self.point = None
        if point is FaultPoint.SLOW_TRANSACTION:
            self._report(f"EOS-FAULT fired: {point.value} batch {batch_id}, stalling {self.stall_s:.0f}s")
            time.sleep(self.stall_s)
            return
        self._report(f"EOS-FAULT fired: {point.value} batch {batch_id}, killing the driver")
        # spark-submit relays the Python driver's output through a JVM thread: give it a moment,
        # or the proof that the fault fired dies with the process.
        time.sleep(1)
        os.kill(os.getppid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

    @staticmethod
    def _report(message: str) -> None:
        log.warning(message)
        for handler in logging.getLogger().handlers:
            handler.flush()
        if report_file := os.environ.get("EOS_FAULT_REPORT"):
            with open(report_file, "a") as out:
                out.write(message + "\n")
                out.flush()
                os.fsync(out.fileno())
