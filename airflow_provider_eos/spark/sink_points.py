"""The named points the sink announces, and the one way for tests, the soak and the bench to plug in.

The product's writers only announce where they are: the driver at each :class:`SinkPoint` of a
batch, the write tasks at each :class:`TaskPoint`. By default nobody listens (:class:`SinkObserver`
and :class:`TaskObserver` do nothing). What happens at a point (a SIGKILL, a stall, a report line)
lives outside this package, in a plug-in: the crash tests' fault injection (``tests/support/faults``,
which the soak and the bench's recovery run use too) and the bench's ``noop`` sink (``bench/noop_sink.py``).

A plug-in is named by ``EOS_SINK_PLUGIN=<module>:<factory>``, a callable returning a
:class:`SinkPlugin`. It is loaded only when ``EOS_FAULT_INJECTION_ACK=kill-this-driver`` is set as
well, so no single stray variable in a production environment can change what a driver does; the
fault plug-in in turn fires only with its own ``EOS_FAULT_INJECTION=<point>@<batch>`` setting. The
module must be importable where the driver runs (tests put the repository root on ``PYTHONPATH``);
what the tasks are given travels with them, pickled on the driver.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from airflow_provider_eos.core.errors import SpecError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from airflow_provider_eos.core.spec import Mode, PipelineSpec

__all__ = ["ACK_ENV", "ACK_VALUE", "ARMING_ENV", "PLUGIN_ENV", "BatchPoints", "BatchSink", "SinkObserver",
           "SinkPlugin", "SinkPoint", "TaskObserver", "TaskPoint", "UnknownModeError", "load_plugin", "run_mode"]

log = logging.getLogger(__name__)

#: ``<module>:<factory>`` of the plug-in (test, soak and bench only).
PLUGIN_ENV = "EOS_SINK_PLUGIN"
#: The acknowledgement without which no plug-in is loaded.
ACK_ENV = "EOS_FAULT_INJECTION_ACK"
ACK_VALUE = "kill-this-driver"
#: The fault plug-in's setting (``<point>@<batch>[:<partition>]``); named here only to warn when it arms nothing.
ARMING_ENV = "EOS_FAULT_INJECTION"


class SinkPoint(StrEnum):
    """Where the driver is in a batch (the driver writer's order; the executor writers announce the first and last)."""

    #: The transaction is open (driver writer), or the tasks are about to start (executor writers).
    BEFORE_PRODUCE = "before_produce"
    #: Every row produced and flushed; the offsets and marker not yet sent, the transaction open.
    AFTER_PRODUCE = "after_produce"
    #: Right after :attr:`AFTER_PRODUCE`, still before the commit: where a slow batch would stall.
    SLOW_TRANSACTION = "slow_transaction"
    #: The batch's Kafka transaction(s) committed; Spark's commit log not yet written.
    AFTER_KAFKA_COMMIT = "after_kafka_commit"


class TaskPoint(StrEnum):
    """Where a write task is, for the Kafka partition (executor writers) or Spark partition (spill) it writes."""

    #: Executor writers: the partition's rows produced and flushed, its transaction open, not committed.
    TASK_AFTER_PRODUCE = "task_after_produce"
    #: Executor writers: the partition's transaction committed, the task not yet reported.
    TASK_AFTER_COMMIT = "task_after_commit"
    #: Driver writer: the task's spill file complete, the task not yet reported.
    TASK_AFTER_SPILL = "task_after_spill"


class TaskObserver:
    """What the write tasks announce their points to; this default does nothing. Pickled with every task."""

    def reached(self, point: TaskPoint, batch_id: int, partition: int) -> None:
        """A task of batch ``batch_id`` reached ``point`` for ``partition``."""

    def jvm_plan(self) -> dict[str, Any] | None:
        """Who listens at the JVM executor writer's points (``TaskObserver.java``); ``None``: nobody.

        ``{"class": <a TaskObserver implementation>, "config": <JSON it is created from>, "jar": <path>}``:
        each task creates the class from its class loader; the driver adds ``jar`` for the executors first.
        """
        return None


class BatchPoints:
    """:meth:`SinkObserver.hit` with the batch id bound, so a writer names only the point."""

    __slots__ = ("_batch_id", "_observer")

    def __init__(self, observer: SinkObserver, batch_id: int) -> None:
        self._observer, self._batch_id = observer, batch_id

    def hit(self, point: SinkPoint) -> None:
        """The driver reached ``point`` of this batch."""
        self._observer.hit(point, self._batch_id)


class SinkObserver:
    """What the driver announces its points to; this default does nothing."""

    def for_batch(self, batch_id: int) -> BatchPoints:
        """The points of one batch."""
        return BatchPoints(self, batch_id)

    def hit(self, point: SinkPoint, batch_id: int) -> None:
        """The driver reached ``point`` of batch ``batch_id``."""

    def for_tasks(self) -> TaskObserver:
        """What this batch's write tasks announce their points to (asked on the driver, once per batch)."""
        return TaskObserver()


class BatchSink(Protocol):
    """A ``foreachBatch`` sink as the job runs it: called per batch, its stats read by the progress logger."""

    stats: dict[int, Any]
    in_batch: bool

    def __call__(self, batch: DataFrame, batch_id: int) -> None: ...

    def close(self) -> None: ...


class SinkPlugin:
    """A plug-in: an observer of the sink's points, and sinks for modes the product does not have."""

    def observer(self, spec: PipelineSpec) -> SinkObserver:
        """What the sink of ``spec`` announces its points to."""
        return SinkObserver()

    def sink(self, mode: str, spec: PipelineSpec, session: SparkSession) -> BatchSink | None:
        """The sink of ``mode``, a mode no :class:`~airflow_provider_eos.core.spec.Mode` names; ``None``: none."""
        return None


def load_plugin() -> SinkPlugin:
    """The plug-in ``EOS_SINK_PLUGIN`` names when ``EOS_FAULT_INJECTION_ACK`` acknowledges it, else the inert one."""
    reference = os.environ.get(PLUGIN_ENV)
    acknowledged = os.environ.get(ACK_ENV) == ACK_VALUE
    if not reference or not acknowledged:
        if reference or os.environ.get(ARMING_ENV):
            # Say why a test's fault does not fire: one of the variables is missing.
            log.warning("no sink plug-in loaded: it needs both %s=<module>:<factory> and %s=%s (test only)",
                        PLUGIN_ENV, ACK_ENV, ACK_VALUE)
        return SinkPlugin()
    module, _, name = reference.partition(":")
    factory: Callable[[], SinkPlugin] = getattr(importlib.import_module(module), name)
    log.warning("EOS-PLUGIN %s loaded (test and bench only)", reference)
    return factory()


class UnknownModeError(SpecError, ValueError):
    """A mode that is no spec mode, without an acknowledged plug-in (a ``ValueError`` too, for argparse)."""


def run_mode(mode: Mode | str) -> str:
    """The ``--mode`` the driver is given: a spec mode's name, or a mode only an acknowledged plug-in has.

    :raises UnknownModeError: ``mode`` is no spec mode and no plug-in is acknowledged.
    """
    from airflow_provider_eos.core.spec import Mode

    if mode in {m.value for m in Mode}:
        return Mode(mode).value
    if os.environ.get(PLUGIN_ENV) and os.environ.get(ACK_ENV) == ACK_VALUE:
        return str(mode)
    raise UnknownModeError(f"unknown mode {mode!r}", fix=f"use one of {', '.join(m.value for m in Mode)} (another "
                           f"mode comes only from a sink plug-in, {PLUGIN_ENV} with {ACK_ENV}: tests and the bench)")
