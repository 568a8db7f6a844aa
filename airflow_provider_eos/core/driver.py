"""The job's driver as recovery sees it: which driver a submission started, and whether it is gone.

DESIGN.md section 3, "Never act on a live job": recovery aborts and fences only once the driver
is *positively* gone. A submission tags every process it starts (spark-submit, the Python
driver, local executors and their Python workers) with a driver token in their environment; the
token is derived from the DAG run, so every task of the run names the same driver without
passing anything, and no other run's driver can match it. "Gone" is an observation of the host
that ran the driver: no process there carries the token. A host that cannot be observed from
here gives no evidence, and no evidence means recovery refuses.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from enum import StrEnum

from airflow_provider_eos.core.model import FrozenModel

DRIVER_TOKEN_ENV = "EOS_DRIVER_TOKEN"
#: The pid of the process that submitted a client-mode driver (an Airflow task): the driver stops
#: after its running batch once that process is gone, so a killed task leaves no driver streaming.
DRIVER_OWNER_PID_ENV = "EOS_DRIVER_OWNER_PID"
"""The environment variable that tags every process of one submission."""

ENTRY_SCRIPT = "eos_job.py"
"""The file name of the job's spark-submit application (``airflow_provider_eos/jobs/``): the Python driver runs it."""

DRIVER_XCOM_KEY = "driver"
"""The XCom key under which a submit task records its :class:`DriverHandle`."""

_TOKEN = re.compile(r"^eos-[a-z0-9_.-]{1,64}-[0-9a-f]{20}$")


def driver_token(pipeline: str, dag_id: str, run_id: str) -> str:
    """The token of the driver that the DAG run ``run_id`` of ``dag_id`` submits for ``pipeline``.

    Stable (every task of the run computes the same one) and unique per run (a hash of the run),
    so a stop or a liveness check can only ever concern the driver its own run started.
    """
    digest = hashlib.sha256(f"{dag_id}\0{run_id}\0{pipeline}".encode()).hexdigest()[:20]
    readable = re.sub(r"[^a-z0-9_.-]", "-", pipeline.lower())[:64] or "pipeline"
    return f"eos-{readable}-{digest}"


def is_driver_token(value: str) -> bool:
    """Whether ``value`` has the shape :func:`driver_token` produces."""
    return bool(_TOKEN.match(value))


class DriverHandle(FrozenModel):
    """What a submission records about the driver it starts (the submit task's XCom ``driver``).

    :param pipeline: the pipeline's name.
    :param token: the driver token every process of the submission carries.
    :param host: the host name of the machine that ran spark-submit (and, in client mode, the driver).
    :param master: the Spark master URL.
    :param deploy_mode: ``client`` or ``cluster``.
    :param submitted_at: when spark-submit was started.
    """

    pipeline: str
    token: str
    host: str
    master: str = "local[2]"
    deploy_mode: str = "client"
    submitted_at: dt.datetime


class DriverProcess(FrozenModel):
    """A process on the observed host that carries a driver token."""

    pid: int
    command: str

    @property
    def is_python_driver(self) -> bool:
        """The Python driver (it stops its query between batches on SIGTERM); the rest are JVMs, workers and
        the launcher scripts (``bash .../spark-class ... eos_job.py`` while spark-submit starts)."""
        program = self.command.split(" ", 1)[0].rsplit("/", 1)[-1]
        return ENTRY_SCRIPT in self.command and program.startswith("python")


class Liveness(StrEnum):
    """What the observation says about the driver."""

    GONE = "GONE"
    ALIVE = "ALIVE"
    UNKNOWN = "UNKNOWN"


class DriverObservation(FrozenModel):
    """The outcome of looking for a driver: the verdict and the evidence behind it.

    :param liveness: GONE only on positive evidence; UNKNOWN when the driver's host cannot be observed.
    :param evidence: one sentence a person can check (what was looked at, where, what was found).
    :param processes: the processes found carrying the token (empty when GONE or UNKNOWN).
    """

    token: str
    liveness: Liveness
    evidence: str
    processes: tuple[DriverProcess, ...] = ()

    @property
    def gone(self) -> bool:
        """True only on positive evidence that no process of the driver is left."""
        return self.liveness is Liveness.GONE


def observe_driver(
    handle: DriverHandle, *, this_host: str, processes: list[DriverProcess] | None, observed_at: dt.datetime
) -> DriverObservation:
    """Judge whether the driver of ``handle`` is gone, from what this host can see.

    :param handle: the submission's record.
    :param this_host: the host name of the machine doing the observing.
    :param processes: the processes of this host that carry the token, or ``None`` when the
        process table could not be read.
    :param observed_at: when the process table was read.
    """
    when = observed_at.isoformat(timespec="seconds")
    if handle.deploy_mode == "cluster":
        return DriverObservation(
            token=handle.token, liveness=Liveness.UNKNOWN,
            evidence=f"the driver runs in the cluster ({handle.master}, cluster deploy mode); only the cluster "
            "manager can say it is gone, and it was not asked",
        )
    if handle.host != this_host:
        return DriverObservation(
            token=handle.token, liveness=Liveness.UNKNOWN,
            evidence=f"the driver ran on host {handle.host!r}, this task runs on {this_host!r}: its processes "
            "cannot be observed from here",
        )
    if processes is None:
        return DriverObservation(
            token=handle.token, liveness=Liveness.UNKNOWN,
            evidence=f"the process table of {this_host!r} could not be read at {when}",
        )
    if processes:
        listed = ", ".join(f"pid {p.pid}" for p in processes)
        return DriverObservation(
            token=handle.token, liveness=Liveness.ALIVE, processes=tuple(processes),
            evidence=f"{len(processes)} process(es) of the driver still run on {this_host!r} at {when}: {listed}",
        )
    return DriverObservation(
        token=handle.token, liveness=Liveness.GONE,
        evidence=f"no process on {this_host!r} carries {DRIVER_TOKEN_ENV}={handle.token} at {when}",
    )
