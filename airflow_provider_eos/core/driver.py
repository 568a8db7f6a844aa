"""The job's driver as recovery sees it: which driver a submission started, and whether it is gone.

docs/architecture.md, "Never act on a live job": recovery aborts and fences only once the driver
is *positively* gone. A submission tags every process it starts (spark-submit, the Python
driver, local executors and their Python workers) with a driver token in their environment; the
token is derived from the DAG run, so every task of the run names the same driver without
passing anything, and no other run's driver can match it. "Gone" is an observation of the host
that ran the driver: no process there carries the token. A host that cannot be observed from
here gives no evidence, and no evidence means recovery refuses.

"The host" is more than its name: containers share host names, and one process table is seen
differently from another pid namespace or by another user (``run_as_user``, ``/proc`` mounted with
``hidepid``). A submission records the boot id, the pid namespace and the user it ran as; an
observer whose identity differs in any of them has no evidence. A process whose environment cannot
be read may be the driver's: no evidence either, never "gone" — unless what anyone may read of it
shows it is not: it runs as another user than the driver, or it started before any driver of the
run could have (``/proc/1`` and the kernel's threads, which even root may not read in some sandboxes).

The process table is one source of :class:`Evidence` among three: the driver's lease in the
checkpoint (:mod:`.driver_lease`) and the cluster manager's record (:mod:`.cluster_records`) answer
from any host, and :mod:`.driver_evidence` combines them (docs/design-notes.md, note 35).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from enum import StrEnum

from airflow_provider_eos.core.frozen_model import FrozenModel

DRIVER_TOKEN_ENV = "EOS_DRIVER_TOKEN"
#: The Spark setting that carries the driver token to a driver that does not inherit spark-submit's
#: environment (cluster deploy mode); the driver reads the environment first, then this. Not named
#: "token": Spark and this package hide settings so named, and the token is no secret.
DRIVER_TOKEN_CONF = "spark.eos.driverTag"
#: The pid of the process that submitted a client-mode driver (an Airflow task): the driver stops
#: after its running batch once that process is gone, so a killed task leaves no driver streaming.
DRIVER_OWNER_PID_ENV = "EOS_DRIVER_OWNER_PID"
"""The environment variable that tags every process of one submission."""

ENTRY_SCRIPT = "eos_job.py"
"""The file name of the job's spark-submit application (``spark_jobs/``): the Python driver runs it."""

DRIVER_XCOM_KEY = "driver"
"""The XCom key under which a submit task records its :class:`DriverHandle`."""

_TOKEN = re.compile(r"^eos-[a-z0-9_.-]{1,64}-[0-9a-f]{20}$")

#: How much earlier than the run's earliest driver a process may seem to start and still be the
#: driver's: process start times are read from boot time and clock ticks, the handle's from the clock.
START_MARGIN = dt.timedelta(seconds=60)


def driver_token(pipeline: str, dag_id: str, run_id: str) -> str:
    """The token of the driver that the DAG run ``run_id`` of ``dag_id`` submits for ``pipeline``.

    Stable (every task of the run computes the same one) and unique per run (a hash of the run),
    so a stop or a liveness check can only ever concern the driver its own run started.
    """
    digest = hashlib.sha256(f"{dag_id}\0{run_id}\0{pipeline}".encode()).hexdigest()[:20]
    readable = re.sub(r"[^a-z0-9_.-]", "-", pipeline.lower())[:64] or "pipeline"
    return f"eos-{readable}-{digest}"


def run_driver_token(pipeline: str, host: str, pid: int, started_at: dt.datetime) -> str:
    """The token of a driver that ``eos run`` starts: one per invocation, shaped as a DAG run's.

    ``eos run`` knows no DAG run; the host, its process id and the time name the invocation, so its
    driver takes the lease and is seen by every liveness check as a DAG's is.
    """
    return driver_token(pipeline, "eos run", f"{host}\0{pid}\0{started_at.isoformat()}")


def untagged_driver_token(pipeline: str, host: str, pid: int, started_at: dt.datetime) -> str:
    """The token a driver gives itself when its submission gave it none (a spark-submit of the job by hand).

    Nothing outside the driver knows it, so no stop or process search can name this driver; what it
    buys is the lease: every liveness check sees the driver, and no second driver starts beside it.
    The driver's host, its process id and its start name it, as :func:`run_driver_token` names an
    ``eos run`` invocation.
    """
    return driver_token(pipeline, "spark-submit", f"{host}\0{pid}\0{started_at.isoformat()}")


def submission_environment(token: str, *, owner_pid: int | None) -> dict[str, str]:
    """The variables that tag a submission's processes with its driver token (the driver takes its lease by it).

    :param owner_pid: the process that submitted a client-mode driver (an Airflow task, ``eos run``):
        the driver stops after its running batch once that process is gone. ``None`` in cluster
        deploy mode, where the driver runs elsewhere.
    """
    return {DRIVER_TOKEN_ENV: token, **({DRIVER_OWNER_PID_ENV: str(owner_pid)} if owner_pid is not None else {})}


def is_driver_token(value: str) -> bool:
    """Whether ``value`` has the shape :func:`driver_token` produces."""
    return bool(_TOKEN.match(value))


class HostIdentity(FrozenModel):
    """What makes two looks at a process table looks at the same one, by the same user.

    :param host: the host name (shared by containers, and by machines a person named alike).
    :param boot_id: the kernel's boot id (``/proc/sys/kernel/random/boot_id``): differs between
        machines, and on one machine after a reboot.
    :param pid_namespace: the inode of the pid namespace (``/proc/self/ns/pid``): differs between
        containers on one kernel, which see different processes under the same pids.
    :param uid: the user: another user may not read the driver's process entries, or see them at all.
    """

    host: str
    boot_id: str | None = None
    pid_namespace: int | None = None
    uid: int | None = None


class DriverHandle(FrozenModel):
    """What a submission records about the driver it starts (the submit task's XCom ``driver``).

    :param pipeline: the pipeline's name.
    :param token: the driver token every process of the submission carries.
    :param host: the host name of the machine that ran spark-submit (and, in client mode, the driver).
    :param master: the Spark master URL.
    :param deploy_mode: ``client`` or ``cluster``.
    :param submitted_at: when spark-submit was started.
    :param earliest_start: no driver of this DAG run (any attempt) started before it: the run's
        ``run_after``; ``None`` when unknown, and then :attr:`submitted_at` bounds it.
    :param boot_id: :attr:`HostIdentity.boot_id` of the submitter; ``None`` in handles recorded before it was.
    :param pid_namespace: :attr:`HostIdentity.pid_namespace` of the submitter, or ``None`` (same).
    :param uid: the user the submitter (and so the driver) ran as, or ``None`` (same).
    :param manager_url: the web address of the cluster manager's record of the application: the
        standalone master's web UI, or the YARN ResourceManager's; ``None``: none known (local
        master, or a handle recorded before it was), and the manager is not asked.
    """

    pipeline: str
    token: str
    host: str
    master: str = "local[2]"
    deploy_mode: str = "client"
    submitted_at: dt.datetime
    earliest_start: dt.datetime | None = None
    boot_id: str | None = None
    pid_namespace: int | None = None
    uid: int | None = None
    manager_url: str | None = None

    @property
    def identity(self) -> HostIdentity:
        """Where the driver was submitted, as far as the handle recorded it."""
        return HostIdentity(host=self.host, boot_id=self.boot_id, pid_namespace=self.pid_namespace, uid=self.uid)


class DriverProcess(FrozenModel):
    """A process on the observed host that carries a driver token."""

    pid: int
    command: str
    #: Its process group (a submission started in a session of its own leads one); ``None``: not read.
    pgid: int | None = None

    @property
    def is_python_driver(self) -> bool:
        """The Python driver (it stops its query between batches on SIGTERM); the rest are JVMs, workers and
        the launcher scripts (``bash .../spark-class ... eos_job.py`` while spark-submit starts)."""
        program = self.command.split(" ", 1)[0].rsplit("/", 1)[-1]
        return ENTRY_SCRIPT in self.command and program.startswith("python")


class UnreadableProcess(FrozenModel):
    """A process of the observed host whose environment could not be read: it may carry the token.

    :param pid: its pid.
    :param uids: its real, effective, saved and filesystem user ids (``/proc/<pid>/status``), or
        ``()`` when even they could not be read.
    :param started_at: when it started (``/proc/<pid>/stat``), or ``None`` when that could not be read.
    :param reason: why the environment could not be read (the error).
    """

    pid: int
    uids: tuple[int, ...] = ()
    started_at: dt.datetime | None = None
    reason: str


class ProcessTable(FrozenModel):
    """What one reading of a host's process table found about a token.

    :param carrying: the processes whose environment carries the token.
    :param unreadable: the processes whose environment could not be read.
    """

    carrying: tuple[DriverProcess, ...] = ()
    unreadable: tuple[UnreadableProcess, ...] = ()


class Liveness(StrEnum):
    """What the observation says about the driver."""

    GONE = "GONE"
    ALIVE = "ALIVE"
    UNKNOWN = "UNKNOWN"


class EvidenceSource(StrEnum):
    """Where a piece of evidence about the driver comes from (docs/design-notes.md, note 35)."""

    PROCESS_TABLE = "process table"
    LEASE = "driver lease"
    STANDALONE_MASTER = "standalone master"
    YARN_RESOURCEMANAGER = "YARN ResourceManager"


class Evidence(FrozenModel):
    """What one source said about the driver.

    :param source: where it comes from.
    :param says: ALIVE or GONE; UNKNOWN is no evidence (the source could not be read, or does not know the driver).
    :param detail: one sentence a person can check: what was looked at and what was found.
    :param processes: for the process table, the processes found carrying the token.
    """

    source: EvidenceSource
    says: Liveness
    detail: str
    processes: tuple[DriverProcess, ...] = ()


class DriverObservation(FrozenModel):
    """The outcome of looking for a driver: the verdict and the evidence behind it.

    :param liveness: GONE only on positive evidence; UNKNOWN when the driver's host cannot be observed.
    :param evidence: one sentence a person can check (what was looked at, where, what was found).
    :param processes: the processes found carrying the token (empty when GONE or UNKNOWN).
    :param sources: what each source said, when several were asked (:mod:`.driver_evidence`).
    """

    token: str
    liveness: Liveness
    evidence: str
    processes: tuple[DriverProcess, ...] = ()
    sources: tuple[Evidence, ...] = ()

    @property
    def gone(self) -> bool:
        """True only on positive evidence that no process of the driver is left."""
        return self.liveness is Liveness.GONE


def observe_driver(
    handle: DriverHandle, *, here: HostIdentity, table: ProcessTable | None, observed_at: dt.datetime,
    group: int | None = None,
) -> DriverObservation:
    """Judge whether the driver of ``handle`` is gone, from what this host can see.

    :param handle: the submission's record.
    :param here: the identity of the observer (host, boot, pid namespace, user).
    :param table: what the process table showed about the token, or ``None`` when it could not be read.
    :param observed_at: when the process table was read.
    :param group: only the processes of this process group count: one attempt's spark-submit
        session, when that attempt's task stops its own driver (the run's next attempt carries the
        same token). ``None``: every process carrying the token.
    """
    when = observed_at.isoformat(timespec="seconds")
    unobservable = _unobservable(handle, here)
    if unobservable is not None:
        return DriverObservation(token=handle.token, liveness=Liveness.UNKNOWN, evidence=unobservable)
    if table is None:
        return DriverObservation(token=handle.token, liveness=Liveness.UNKNOWN,
                                 evidence=f"the process table of {here.host!r} could not be read at {when}")
    carrying = [p for p in table.carrying if group is None or p.pgid == group]
    where = f"{here.host!r}" + (f" (process group {group})" if group is not None else "")
    if carrying:
        listed = ", ".join(f"pid {p.pid}" for p in carrying)
        return DriverObservation(
            token=handle.token, liveness=Liveness.ALIVE, processes=tuple(carrying),
            evidence=f"{len(carrying)} process(es) of the driver still run on {where} at {when}: {listed}",
        )
    hidden = [p for p in table.unreadable if _may_be_the_drivers(p, handle)]
    if hidden:
        listed = ", ".join(f"pid {p.pid} ({p.reason})" for p in hidden[:5]) + (", ..." if len(hidden) > 5 else "")
        user = f"user {handle.uid}" if handle.uid is not None else "a user the handle does not record"
        return DriverObservation(
            token=handle.token, liveness=Liveness.UNKNOWN,
            evidence=f"no readable process on {where} carries {DRIVER_TOKEN_ENV}={handle.token} at {when}, but "
            f"{len(hidden)} process(es) of {user} could not be read and may be the driver's: {listed}",
        )
    return DriverObservation(
        token=handle.token, liveness=Liveness.GONE,
        evidence=f"no process on {where} carries {DRIVER_TOKEN_ENV}={handle.token} at {when}",
    )


def _unobservable(handle: DriverHandle, here: HostIdentity) -> str | None:
    """Why the driver's processes cannot be observed from ``here``, or ``None`` when they can.

    A handle recorded before boot id, pid namespace and user were is judged by its host name
    alone, as it was then.
    """
    if handle.deploy_mode == "cluster":
        return (f"the driver runs in the cluster ({handle.master}, cluster deploy mode): no process table "
                "here can see it; only its lease or the cluster manager can say it is gone")
    if handle.host != here.host:
        return (f"the driver ran on host {handle.host!r}, this task runs on {here.host!r}: its processes "
                "cannot be observed from here")
    for what, recorded, seen in (
        ("boot id", handle.boot_id, here.boot_id),
        ("pid namespace", handle.pid_namespace, here.pid_namespace),
        ("user id", handle.uid, here.uid),
    ):
        if recorded is not None and recorded != seen:
            return (f"the driver ran on {handle.host!r} with {what} {recorded}, this task looks with {what} {seen}: "
                    "another machine, container or user, from which the driver's processes cannot be seen")
    return None


def _may_be_the_drivers(process: UnreadableProcess, handle: DriverHandle) -> bool:
    """Whether an unreadable process may belong to the driver; only what proves otherwise excludes it.

    The driver and everything it starts run as the user who submitted it, so another user's
    process (a daemon; every one of them, for an observer that is not root) is not the driver's.
    Nor is a process that started before any driver of the run could have: every attempt's driver
    starts after the run's ``run_after`` (``/proc/1``, the kernel's threads, long-running services).
    """
    if process.uids and handle.uid is not None and handle.uid not in process.uids:
        return False
    earliest = handle.earliest_start or handle.submitted_at
    return process.started_at is None or process.started_at >= earliest - START_MARGIN
