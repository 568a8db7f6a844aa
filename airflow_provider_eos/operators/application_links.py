"""The submit task's links to its Spark application: the Spark UI, and the application in its cluster manager.

:class:`EosSparkSubmitOperator <airflow_provider_eos.operators.spark_submit.EosSparkSubmitOperator>`
declares both links; while spark-submit runs, :class:`LinkPublisher` pushes their XComs
(``spark_ui_url``, ``spark_application_url``) as soon as the lines of spark-submit's output make them
known (:mod:`airflow_provider_eos.core.application_links`). Each link's ``xcom_key`` is that XCom:
Airflow's api-server shows a link by reading the XCom its ``xcom_key`` names, so the links show
while the (long-running) task still runs, not only after it ended, when the worker stores each
link's :meth:`~SparkUiLink.get_link` under that key. An unavailable link is ``""`` (a local master
has no cluster manager; a driver with the Spark UI off has no UI).

This module imports no Spark provider: the api-server imports it (the provider info's ``extra-links``)
on hosts without the ``spark`` extra.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperatorLink

from airflow_provider_eos.core.application_links import (
    SPARK_APPLICATION_XCOM_KEY,
    SPARK_UI_XCOM_KEY,
    ApplicationLinks,
    LinkScanner,
)

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

__all__ = ["LinkPublisher", "SparkApplicationLink", "SparkUiLink"]


def _pushed_link(ti_key: TaskInstanceKey, key: str) -> str:
    # The Task SDK's XCom: in the worker (where Airflow stores each link at the task's end) it asks the supervisor.
    from airflow.sdk.execution_time.xcom import XCom

    value = XCom.get_value(ti_key=ti_key, key=key)
    return value if isinstance(value, str) else ""


class _PushedLink(BaseOperatorLink):
    """A link the submit task pushes as an XCom of its own; the api-server reads it from that XCom."""

    _key: str

    @property
    def xcom_key(self) -> str:
        """The XCom the submit task pushes (the api-server reads the link from it)."""
        return self._key

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        """What the submit task found; ``""`` when it found none."""
        return _pushed_link(ti_key, self._key)


class SparkUiLink(_PushedLink):
    """The running driver's Spark UI: its own address (client deploy mode), or YARN's proxy to it."""

    name = "Spark UI"
    _key = SPARK_UI_XCOM_KEY


class SparkApplicationLink(_PushedLink):
    """The application in its cluster manager: the standalone master's application page, or YARN's
    (none on a local master)."""

    name = "Spark application"
    _key = SPARK_APPLICATION_XCOM_KEY


class LinkPublisher:
    """Feeds spark-submit's output lines to a :class:`LinkScanner` and pushes the links' XComs once.

    The links are a convenience: a failure to find or push them is logged, never the task's failure.

    :param ti: the task instance (its ``xcom_push``).
    :param scanner: the scanner for this submission's master, deploy mode and cluster manager.
    :param log: the operator's logger.
    """

    def __init__(self, ti: Any, scanner: LinkScanner, log: logging.Logger) -> None:
        self.ti, self.scanner, self.log = ti, scanner, log

    def line(self, line: str) -> None:
        """One line of spark-submit's output."""
        try:
            links = self.scanner.feed(line)
        except Exception as exc:  # a bug here must not stop the following of spark-submit
            self.log.warning("Could not read the Spark application's links from spark-submit's output: %s", exc)
            return
        self._push(links)

    def ended(self, app_id: str | None = None) -> None:
        """spark-submit's output ended; ``app_id``: the application id the Spark provider's hook found, if any."""
        self._push(self.scanner.at_end(app_id))

    def _push(self, links: ApplicationLinks | None) -> None:
        if links is None:
            return
        try:
            for key, value in links.xcoms().items():
                self.ti.xcom_push(key=key, value=value)
        except Exception as exc:
            self.log.warning("Could not record the Spark application's links (%s): %s", links, exc)
            return
        self.log.info("Spark UI: %s; the application in its cluster manager: %s",
                      links.spark_ui_url or "none", links.spark_application_url or "none")
