"""The cluster manager's record of the driver's application, and what it says about the driver (pure).

Two managers keep a record any worker can read over HTTP (:mod:`airflow_provider_eos.spark.cluster_records`
reads it; this module parses and judges):

- the Spark standalone master's web UI ``/json/``: ``activeapps`` and ``completedapps``, each with
  its ``name`` (the driver names its application after its driver token) and its state. Only
  client deploy mode: spark-submit refuses Python applications in cluster deploy mode on a
  standalone cluster, so no driver of this package is ever one of the master's ``activedrivers``.
- the YARN ResourceManager's ``/ws/v1/cluster/apps?applicationTags=<token>``: every submission
  tags its application with its driver token (``spark.yarn.tags``); client and cluster deploy mode.

An application the manager lists as running (or waiting, or accepted) is ALIVE evidence. A
terminal one is GONE evidence only once :data:`SETTLE` has passed since it ended, by the
observer's clock with :data:`~.driver_lease.CLOCK_SKEW_MARGIN`: the manager records the end
before the processes are gone (YARN marks an application KILLED, then its NodeManagers stop the
containers at their next heartbeat). Why a terminal state means the driver can no longer act, per
manager and deploy mode: docs/design-notes.md, note 35. An unreachable manager, an answer that is
not the document expected, or no application of the token: no evidence.
"""

from __future__ import annotations

import datetime as dt
import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from airflow_provider_eos.core.driver import START_MARGIN, DriverHandle, Evidence, EvidenceSource, Liveness
from airflow_provider_eos.core.driver_lease import CLOCK_SKEW_MARGIN

__all__ = [
    "SETTLE",
    "StandaloneApp",
    "StandaloneMasterRecord",
    "StandaloneWorker",
    "YarnApp",
    "judge_standalone_master",
    "judge_yarn_apps",
    "live_yarn_apps",
    "manager_web_url",
    "parse_standalone_master",
    "parse_yarn_apps",
]

#: How long after the manager recorded the application's end its processes are surely stopped: a
#: YARN NodeManager stops a finished application's containers at its next heartbeat (1 s) with a
#: SIGTERM, then SIGKILL 250 ms later; a standalone worker kills the executors when the master tells it.
SETTLE = dt.timedelta(seconds=10)

#: The standalone master's web UI port when nothing else is known (Spark's ``spark.master.ui.port``).
STANDALONE_WEBUI_PORT = 8080

_YARN_LIVE = frozenset({"NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING"})
_YARN_ENDED = frozenset({"FINISHED", "FAILED", "KILLED"})
_STANDALONE_ENDED = frozenset({"FINISHED", "FAILED", "KILLED"})


def _ms(value: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(value / 1000, dt.UTC)


class StandaloneApp(BaseModel):
    """An application as the standalone master's ``/json/`` lists it (``ApplicationInfo``)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    name: str
    state: str
    starttime: int
    duration: int = 0


class StandaloneWorker(BaseModel):
    """A worker as the standalone master's ``/json/`` lists it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    host: str
    port: int
    state: str
    cores: int = 0
    coresfree: int = 0


class StandaloneMasterRecord(BaseModel):
    """The standalone master's web UI ``/json/`` (``MasterStateResponse``): the one model of it.

    The liveness check reads its applications; the devstack (``devstack/spark_cluster_state.MasterView``)
    its status and workers.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    url: str
    status: str
    workers: list[StandaloneWorker] = []
    activeapps: list[StandaloneApp] = []
    completedapps: list[StandaloneApp] = []


class YarnApp(BaseModel):
    """An application as the ResourceManager's ``/ws/v1/cluster/apps`` lists it."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    id: str
    name: str = ""
    state: str
    final_status: str = Field("UNDEFINED", alias="finalStatus")
    started_time: int = Field(0, alias="startedTime")
    finished_time: int = Field(0, alias="finishedTime")
    application_tags: str = Field("", alias="applicationTags")

    @property
    def tags(self) -> set[str]:
        return {tag.strip() for tag in self.application_tags.split(",") if tag.strip()}


def manager_web_url(master: str, *, standalone_webui: str | None = None,
                    resourcemanager: str | None = None) -> str | None:
    """Where the cluster manager of ``master`` keeps its record of applications; ``None`` when none does.

    :param standalone_webui: the standalone master's web UI, when given (else its host, port 8080;
        with several masters, the first, as the others stand by).
    :param resourcemanager: the YARN ResourceManager's web address.
    """
    if master.startswith("spark://"):
        if standalone_webui:
            return standalone_webui.rstrip("/")
        host = master.removeprefix("spark://").split(",", 1)[0].rsplit(":", 1)[0]
        return f"http://{host}:{STANDALONE_WEBUI_PORT}"
    if master.startswith("yarn") and resourcemanager:
        return (resourcemanager if "://" in resourcemanager else f"http://{resourcemanager}").rstrip("/")
    return None


def parse_standalone_master(text: str | bytes) -> StandaloneMasterRecord | str:
    """The master's ``/json/``, or why it is not one (a sentence, for the evidence)."""
    try:
        return StandaloneMasterRecord.model_validate_json(text)
    except ValidationError as err:
        return f"the answer is not the master's /json/ document ({err.error_count()} errors)"


def parse_yarn_apps(text: str | bytes) -> list[YarnApp] | str:
    """The applications of ``/ws/v1/cluster/apps`` (``{"apps": null}`` when none), or why it is not that document."""
    try:
        document = json.loads(text)
        apps = (document["apps"] or {}).get("app", [])
        return [YarnApp.model_validate(app) for app in apps]
    except (ValueError, KeyError, TypeError, AttributeError, ValidationError) as err:
        return f"the answer is not the ResourceManager's application list ({type(err).__name__})"


def _settled(ended_at: dt.datetime, observed_at: dt.datetime) -> bool:
    return observed_at >= ended_at + SETTLE + CLOCK_SKEW_MARGIN


def _of_this_run(started_at: dt.datetime, handle: DriverHandle) -> bool:
    """An application started before the run became due is an older run's (same token only if reused by hand)."""
    return started_at >= (handle.earliest_start or handle.submitted_at) - START_MARGIN


def judge_standalone_master(
    handle: DriverHandle, record: StandaloneMasterRecord | None, *, observed_at: dt.datetime,
    problem: str | None = None,
) -> Evidence:
    """What the standalone master's record says about the driver of ``handle`` (its application is named by the token).

    :param record: the master's ``/json/``, or ``None`` when it could not be read (``problem``).
    """
    def said(says: Liveness, detail: str) -> Evidence:
        return Evidence(source=EvidenceSource.STANDALONE_MASTER, says=says, detail=f"{handle.manager_url}: {detail}")

    if record is None:
        return said(Liveness.UNKNOWN, f"not readable ({problem or 'no answer'})")
    active = [app for app in record.activeapps if app.name == handle.token]
    if active:
        listed = ", ".join(f"{app.id} {app.state}" for app in active)
        return said(Liveness.ALIVE, f"application {listed} is active")
    ended = [app for app in record.completedapps
             if app.name == handle.token and _of_this_run(_ms(app.starttime), handle)]
    if not ended:
        return said(Liveness.UNKNOWN, f"no application named {handle.token}")
    last = max(ended, key=lambda app: app.starttime)
    ended_at = _ms(last.starttime + last.duration)
    when = f"{last.id} {last.state} since {ended_at.isoformat(timespec='seconds')}"
    if last.state not in _STANDALONE_ENDED:
        return said(Liveness.UNKNOWN, f"application {when}, a state that does not say the driver ended")
    if not _settled(ended_at, observed_at):
        return said(Liveness.UNKNOWN, f"application {when}, too recently to be sure its processes stopped")
    return said(Liveness.GONE, f"application {when}; the master ended it and its executors")


def live_yarn_apps(handle: DriverHandle, apps: list[YarnApp]) -> list[YarnApp]:
    """The applications of ``apps`` tagged with the driver token of ``handle`` that YARN has not ended yet.

    What the liveness judgement calls ALIVE, and what a deliberate stop kills.
    """
    return [app for app in apps if handle.token in app.tags and app.state in _YARN_LIVE]


def judge_yarn_apps(
    handle: DriverHandle, apps: list[YarnApp] | None, *, observed_at: dt.datetime, problem: str | None = None,
) -> Evidence:
    """What the ResourceManager's applications tagged with the token say about the driver of ``handle``.

    :param apps: the applications the ResourceManager listed for the tag, or ``None`` when it could not be asked.
    """
    def said(says: Liveness, detail: str) -> Evidence:
        return Evidence(source=EvidenceSource.YARN_RESOURCEMANAGER, says=says, detail=f"{handle.manager_url}: {detail}")

    if apps is None:
        return said(Liveness.UNKNOWN, f"not readable ({problem or 'no answer'})")
    tagged = [app for app in apps if handle.token in app.tags]
    live = live_yarn_apps(handle, apps)
    if live:
        return said(Liveness.ALIVE, "application " + ", ".join(f"{app.id} {app.state}" for app in live) + " is live")
    ended = [app for app in tagged if app.state in _YARN_ENDED and _of_this_run(_ms(app.started_time), handle)]
    if not ended:
        return said(Liveness.UNKNOWN, f"no application tagged {handle.token}")
    last = max(ended, key=lambda app: app.started_time)
    ended_at = _ms(last.finished_time or last.started_time)
    when = f"{last.id} {last.state}/{last.final_status} since {ended_at.isoformat(timespec='seconds')}"
    if not last.finished_time or not _settled(ended_at, observed_at):
        return said(Liveness.UNKNOWN, f"application {when}, too recently to be sure its containers stopped")
    return said(Liveness.GONE, f"application {when}; YARN stopped its containers")
