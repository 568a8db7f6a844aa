"""Where a running pipeline's Spark application is shown: its Spark UI and its cluster manager's page (pure).

The submit task's page in the Airflow UI links to both (operator extra links). What the task
knows comes from spark-submit's output, which it reads anyway:

- the driver's own ``EOS-APP`` line at start, ``EOS-APP {"app_id": ..., "ui_url": ...}``: the
  application id and the Spark UI address the driver's SparkContext reports (``null`` when the
  UI is off). Only where the driver's output is spark-submit's: client deploy mode.
- on YARN in cluster deploy mode, where the driver runs in the application master's container,
  YARN's client's own lines: the application id and its ``tracking URL:``, the ResourceManager's
  proxy to the driver's UI.

:class:`LinkScanner` reads the lines and says the links once, when they are known; the URLs are
built from the application id and the manager's web address the operator already computes for
the recovery branch (:func:`~airflow_provider_eos.core.cluster_records.manager_web_url`). An
unavailable link is the empty string, as Airflow expects.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote

from airflow_provider_eos.core.frozen_model import FrozenModel

__all__ = [
    "APP_LINE_TAG",
    "SPARK_APPLICATION_XCOM_KEY",
    "SPARK_UI_XCOM_KEY",
    "ApplicationLinks",
    "DriverApplication",
    "LinkScanner",
    "app_line",
    "application_url",
    "parse_app_line",
    "parse_tracking_url",
    "spark_ui_url",
]

#: The tag of the driver's line naming its application (the style of ``EOS-PROGRESS``, ``EOS-LEASE``).
APP_LINE_TAG = "EOS-APP"
#: The XCom of the submit task holding the Spark UI's address ("" when there is none).
SPARK_UI_XCOM_KEY = "spark_ui_url"
#: The XCom of the submit task holding the application's page in its cluster manager ("" when there is none).
SPARK_APPLICATION_XCOM_KEY = "spark_application_url"

_APP_LINE = re.compile(re.escape(APP_LINE_TAG) + r" (\{.*\})\s*$")
# YARN's client prints "tracking URL: N/A" until the ResourceManager has one: only an address counts.
_TRACKING_URL = re.compile(r"tracking URL: (https?://\S+)")
# As the Spark provider's hook finds it in the same lines (``application[0-9_]+``), anchored to a whole id.
_YARN_APP_ID = re.compile(r"\bapplication_\d+_\d+\b")


class DriverApplication(FrozenModel):
    """What the driver says of its application in its ``EOS-APP`` line.

    :param app_id: ``spark.sparkContext.applicationId`` (``app-...`` standalone, ``application_...`` YARN,
        ``local-...`` local).
    :param ui_url: ``spark.sparkContext.uiWebUrl``; ``None`` when the Spark UI is off (``spark.ui.enabled``).
    """

    app_id: str
    ui_url: str | None = None


class ApplicationLinks(FrozenModel):
    """The submit task's two links; ``""`` for one that is not available."""

    spark_ui_url: str = ""
    spark_application_url: str = ""

    def xcoms(self) -> dict[str, str]:
        """The XComs the submit task pushes, by key."""
        return {SPARK_UI_XCOM_KEY: self.spark_ui_url, SPARK_APPLICATION_XCOM_KEY: self.spark_application_url}


def app_line(app_id: str, ui_url: str | None) -> str:
    """The driver's ``EOS-APP`` line (one JSON object, keys sorted, as the other ``EOS-`` lines)."""
    return f"{APP_LINE_TAG} {json.dumps({'app_id': app_id, 'ui_url': ui_url}, sort_keys=True)}"


def parse_app_line(line: str) -> DriverApplication | None:
    """The application an ``EOS-APP`` line names, after whatever prefix the logger gives; ``None`` for other lines."""
    match = _APP_LINE.search(line)
    if match is None:
        return None
    try:
        return DriverApplication.model_validate_json(match.group(1))
    except ValueError:  # a line that only looks like one (pydantic's ValidationError is a ValueError)
        return None


def parse_tracking_url(line: str) -> str | None:
    """The address of a YARN client's ``tracking URL:`` line; ``None`` for other lines and for ``N/A``."""
    match = _TRACKING_URL.search(line)
    return match.group(1) if match else None


def application_url(master: str, manager_url: str | None, app_id: str | None) -> str:
    """The application's page in its cluster manager's web UI; ``""`` where there is none (local, no address).

    :param master: the Spark master URL (``spark://...``, ``yarn``, ``local[2]``, ...).
    :param manager_url: the manager's web address: the standalone master's web UI or the ResourceManager's.
    """
    if not manager_url or not app_id:
        return ""
    manager_url = manager_url.rstrip("/")
    if master.startswith("spark://"):
        return f"{manager_url}/app/?appId={quote(app_id, safe='')}"
    if master.startswith("yarn"):
        return f"{manager_url}/cluster/app/{quote(app_id, safe='')}"
    return ""


def spark_ui_url(master: str, manager_url: str | None, app_id: str | None, *, driver_ui_url: str | None,
                 tracking_url: str | None = None) -> str:
    """The running driver's Spark UI; ``""`` when it has none (the UI is off) or its address is not known.

    On YARN the address a browser can open is the ResourceManager's proxy (the driver's UI redirects
    other requests there): YARN's tracking URL when its client printed it, else the proxy address
    of the application, if the driver has a UI. Elsewhere: the driver's own address.
    """
    if master.startswith("yarn"):
        if tracking_url:
            return tracking_url
        if driver_ui_url and manager_url and app_id:
            return f"{manager_url.rstrip('/')}/proxy/{quote(app_id, safe='')}/"
        return ""
    return driver_ui_url or ""


class LinkScanner:
    """Reads spark-submit's output, line by line, and says the links once, as soon as they are known.

    Client deploy mode: at the driver's ``EOS-APP`` line. YARN cluster deploy mode: at the first
    ``tracking URL:`` with an address, once the application id is known; or, if spark-submit ends
    first, with what is known then (:meth:`at_end`).

    :param master: the Spark master URL.
    :param deploy_mode: ``client`` or ``cluster``.
    :param manager_url: the cluster manager's web address (``None`` when there is none or it is unknown).
    """

    def __init__(self, master: str, deploy_mode: str, manager_url: str | None) -> None:
        self.master, self.manager_url = master, manager_url
        self._yarn_cluster = master.startswith("yarn") and deploy_mode == "cluster"
        self._app_id: str | None = None
        self._tracking_url: str | None = None
        self._said = False

    def feed(self, line: str) -> ApplicationLinks | None:
        """The links, the first time ``line`` makes them known; ``None`` otherwise (and ever after)."""
        if self._said:
            return None
        if self._yarn_cluster:
            if self._app_id is None and (found := _YARN_APP_ID.search(line)):
                self._app_id = found.group(0)
            self._tracking_url = self._tracking_url or parse_tracking_url(line)
            if self._app_id and self._tracking_url:
                return self._say(driver_ui_url=None)
            return None
        driver = parse_app_line(line)
        if driver is None:
            return None
        self._app_id = driver.app_id
        return self._say(driver_ui_url=driver.ui_url)

    def at_end(self, app_id: str | None = None) -> ApplicationLinks | None:
        """When spark-submit's output ends: the links from what is known, if not said yet and an application is known.

        :param app_id: the application id found otherwise (the Spark provider's hook, on YARN), if any.
        """
        self._app_id = self._app_id or app_id
        if self._said or not self._app_id:
            return None
        return self._say(driver_ui_url=None)

    def _say(self, *, driver_ui_url: str | None) -> ApplicationLinks:
        self._said = True
        return ApplicationLinks(
            spark_ui_url=spark_ui_url(self.master, self.manager_url, self._app_id, driver_ui_url=driver_ui_url,
                                      tracking_url=self._tracking_url),
            spark_application_url=application_url(self.master, self.manager_url, self._app_id),
        )
