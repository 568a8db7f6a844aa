"""The Spark driver's side of the ``jvm/`` module's jar (``executor_writer: jvm``): its registry, the observers' jars.

Both JVM writers go through it: the executor writers' tasks (:mod:`.jvm_writer`) and the driver
writer's spill (:mod:`.jvm_spill`). The registry is the driver JVM's ``DriverRegistry`` (py4j):
the executor writers register their client settings there, and both writes (:meth:`WriterJar.write`)
take their tasks' reports from it once the write returned (or failed: its finished tasks').
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.errors import PrerequisiteError
from airflow_provider_eos.devstack.jars import EXECUTOR_WRITER_FIX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["REGISTRY_CLASS", "WriterJar", "observer_entry"]

REGISTRY_CLASS = "io.github.airflowprovidereos.writer.DriverRegistry"

log = logging.getLogger("airflow_provider_eos.sink")


def observer_entry(plan: dict[str, Any] | None) -> dict[str, Any] | None:
    """A task observer's plan as the tasks get it: its class and configuration (the jar is the driver's business)."""
    return None if plan is None else {"class": plan["class"], "config": plan.get("config")}


class WriterJar:
    """The jar as one driver uses it: the registry, checked once, and each observer's jar added once."""

    def __init__(self) -> None:
        self._registry: Any = None
        self._observer_jars: set[str] = set()

    def registry(self, session: SparkSession) -> Any:
        """The driver JVM's ``DriverRegistry``.

        :raises PrerequisiteError: the jar is not on the driver's classpath, naming the fix.
        """
        if self._registry is None:
            from py4j.protocol import Py4JError

            jvm = session.sparkContext._jvm
            try:
                registry = jvm.io.github.airflowprovidereos.writer.DriverRegistry
                registry.version()
            except (Py4JError, TypeError) as exc:  # py4j: an unknown class is a JavaPackage, not callable
                raise PrerequisiteError(
                    f"`executor_writer: jvm` needs the JVM writer ({REGISTRY_CLASS}), which is not on the "
                    "Spark driver's classpath", fix=EXECUTOR_WRITER_FIX) from exc
            self._registry = registry
        return self._registry

    def write(self, frame: DataFrame, source: str, options: dict[str, str], report_key: str,
              observer: dict[str, Any] | None, failed_reports: list[Any] | None = None) -> Any:
        """Run ``frame.write.format(source)`` with ``options``; returns its tasks' reports (a list, or ``None``
        when the write stored none). A failed write's reports are taken too, so none outlive it.

        :param report_key: where the write keeps its tasks' reports in the driver JVM (in ``options``).
        :param observer: the tasks' observer plan (:meth:`TaskObserver.jvm_plan`): its jar is added first.
        :param failed_reports: where a failed write's reports go (those of the tasks that finished before
            it failed); ``None``: they are dropped.
        """
        session = frame.sparkSession
        registry = self.registry(session)
        self.add_observer_jar(session, observer)
        writer = frame.write.format(source).mode("append")
        for key, value in options.items():
            writer = writer.option(key, value)
        try:
            writer.save()
        except Exception:
            found = self._take_failed_reports(registry, report_key)
            if failed_reports is not None:
                failed_reports += [report for report in found if report is not None]
            raise
        found = registry.takeReports(report_key)
        return None if found is None else json.loads(found)

    @staticmethod
    def _take_failed_reports(registry: Any, report_key: str) -> list[Any]:
        from py4j.protocol import Py4JError

        try:
            found = registry.takeReports(report_key)
        except Py4JError as exc:  # the JVM is gone, and the write's own error says why
            log.debug("could not take the failed write's reports: %s", exc)
            return []
        return [] if found is None else json.loads(found)

    def add_observer_jar(self, session: SparkSession, plan: dict[str, Any] | None) -> None:
        """Ship a plug-in's task observer to the executors, once (``SparkContext.addJar``)."""
        jar = None if plan is None else plan.get("jar")
        if jar and jar not in self._observer_jars:
            # PySpark's SparkContext has no addJar; the JVM's does (Spark 4's addArtifacts is Spark Connect's).
            session.sparkContext._jsc.addJar(jar)
            self._observer_jars.add(jar)
