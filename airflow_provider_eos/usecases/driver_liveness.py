"""Is the run's driver gone? Ask every source that can say, from whichever worker asks (docs/design-notes.md, note 35).

The sources: this host's process table (:mod:`airflow_provider_eos.spark.driver_processes`; the
best evidence when this worker ran the driver, none otherwise), the driver's lease in the
checkpoint (:mod:`airflow_provider_eos.core.driver_lease`) and the cluster manager's record of
the application (:mod:`airflow_provider_eos.core.cluster_records`, read here over HTTP). The
core judges each and combines them (:func:`~airflow_provider_eos.core.driver_evidence.combine_evidence`):
alive wins, gone needs a source that holds for the master and deploy mode, else UNKNOWN.
"""

from __future__ import annotations

import datetime as dt
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from airflow_provider_eos.core.checkpoint.eos_records import read_through_rewrite
from airflow_provider_eos.core.cluster_records import (
    judge_standalone_master,
    judge_yarn_apps,
    parse_standalone_master,
    parse_yarn_apps,
)
from airflow_provider_eos.core.driver import DriverHandle, DriverObservation, Evidence, EvidenceSource, Liveness
from airflow_provider_eos.core.driver_evidence import combine_evidence
from airflow_provider_eos.core.driver_lease import DriverLease, judge_lease, lease_holder, read_driver_lease
from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.spark.driver_processes import observe

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.core.driver import HostIdentity

__all__ = ["HTTP_TIMEOUT_S", "http_get", "observe_driver_anywhere", "read_lease_for_gate", "wait_until_driver_gone",
           "wait_until_gone_unless_renewed", "wait_while_driver_alive", "yarn_apps_url"]

#: Seconds one request to a cluster manager may take: an unreachable one is no evidence, not a wait.
HTTP_TIMEOUT_S = 5.0

#: ``fetch(url) -> body``; raises ``OSError`` (``urllib``'s errors and timeouts are) when there is no answer.
Fetch = Callable[[str], bytes]


def http_get(url: str) -> bytes:
    """GET ``url`` within :data:`HTTP_TIMEOUT_S` (a cluster manager's record); the body."""
    with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as response:
        return response.read()


def process_table_evidence(handle: DriverHandle, here: HostIdentity | None = None) -> Evidence:
    """What this host's process table says (UNKNOWN from another host, boot, pid namespace or user)."""
    seen = observe(handle, here=here)
    return Evidence(source=EvidenceSource.PROCESS_TABLE, says=seen.liveness, detail=seen.evidence,
                    processes=seen.processes)


def lease_evidence(handle: DriverHandle, checkpoint: CheckpointReader | None) -> Evidence:
    """What the checkpoint's driver lease says; no evidence when the checkpoint cannot be read."""
    if checkpoint is None:
        return judge_lease(handle, None, observed_at=_now(), problem="no checkpoint location known")
    read = _read_lease(checkpoint)
    return judge_lease(handle, read.lease, observed_at=read.observed_at, problem=read.problem)


@dataclass(frozen=True)
class _LeaseRead:
    """One reading of the lease: when (the observer's clock, before the read), what, or why nothing."""

    observed_at: dt.datetime
    lease: DriverLease | None
    problem: str | None = None


def _read_lease(checkpoint: CheckpointReader) -> _LeaseRead:
    """The lease, read through a rewrite in place (:func:`read_through_rewrite`, design note 48).

    The clock is read before each read: a renewal that lands while the observer reads must not meet
    an observation time later than the read (core/driver_lease.py has the argument).
    """
    clock: list[dt.datetime] = []

    def once() -> DriverLease | None:
        clock.append(_now())
        return read_driver_lease(checkpoint)

    try:
        lease = read_through_rewrite(checkpoint, once, what=f"read the driver lease in {checkpoint.location}")
    except (EosError, OSError, ValueError) as err:
        return _LeaseRead(clock[-1] if clock else _now(), None, f"{type(err).__name__}: {err}")
    return _LeaseRead(clock[-1], lease)


def read_lease_for_gate(checkpoint: CheckpointReader) -> tuple[dt.datetime, DriverLease | None]:
    """``(observed_at, lease)`` for a recovery action's liveness gate; the lease is ``None`` when absent or unreadable.

    Read as every observer here reads it (through a rewrite in place, the clock taken before the
    read). An unreadable lease is no evidence either way, as for :func:`lease_evidence`.
    """
    read = _read_lease(checkpoint)
    return read.observed_at, read.lease


def manager_evidence(handle: DriverHandle, fetch: Fetch = http_get) -> Evidence | None:
    """What the cluster manager's record says; ``None`` when the handle names no manager (local master)."""
    if handle.manager_url is None:
        return None
    observed_at = _now()  # before asking, as for the lease
    if handle.master.startswith("spark://"):
        url, parse, judge = f"{handle.manager_url}/json/", parse_standalone_master, judge_standalone_master
    else:
        url, parse, judge = yarn_apps_url(handle), parse_yarn_apps, judge_yarn_apps
    body, problem = _fetched(fetch, url)
    record = parse(body) if body is not None else None
    if isinstance(record, str):  # not the document expected: why, as the evidence says it
        record, problem = None, record
    return judge(handle, record, observed_at=observed_at, problem=problem)


def yarn_apps_url(handle: DriverHandle) -> str:
    """The ResourceManager's list of the applications tagged with the driver token of ``handle``."""
    return f"{handle.manager_url}/ws/v1/cluster/apps?{urllib.parse.urlencode({'applicationTags': handle.token})}"


def _fetched(fetch: Fetch, url: str) -> tuple[bytes | None, str | None]:
    try:
        return fetch(url), None
    except (OSError, ValueError) as err:  # URLError, HTTPError and timeouts are OSErrors
        return None, f"{url}: {type(err).__name__}: {err}"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def observe_driver_anywhere(
    handle: DriverHandle, checkpoint: CheckpointReader | None, *, here: HostIdentity | None = None,
    fetch: Fetch = http_get,
) -> DriverObservation:
    """Ask every source about the driver of ``handle`` now and combine what they say.

    :param checkpoint: the pipeline's checkpoint (its lease), or ``None`` when unknown.
    :param here: who looks at the process table (default: this process); tests pass another identity.
    :param fetch: reads a cluster manager's URL (tests pass their own).
    """
    evidence = [process_table_evidence(handle, here), lease_evidence(handle, checkpoint)]
    manager = manager_evidence(handle, fetch)
    if manager is not None:
        evidence.append(manager)
    return combine_evidence(handle, evidence)


def wait_until_driver_gone(
    handle: DriverHandle, checkpoint: CheckpointReader | None, timeout_s: float, poll_s: float = 2.0, *,
    here: HostIdentity | None = None, fetch: Fetch = http_get,
) -> DriverObservation:
    """Observe until the driver is positively gone or ``timeout_s`` passes; returns the last observation.

    An UNKNOWN is waited out too: a lease expires, a manager's record settles, after a while.
    """
    policy = RetryPolicy("positive evidence that the driver is gone", timeout_s=timeout_s, first_delay_s=poll_s,
                         max_delay_s=poll_s)
    return policy.poll(lambda: observe_driver_anywhere(handle, checkpoint, here=here, fetch=fetch),
                       until=lambda seen: seen.liveness is Liveness.GONE, what=f"end of driver {handle.token}").value


def earlier_driver(handle: DriverHandle, checkpoint: CheckpointReader | None) -> DriverHandle:
    """A retried submit's earlier driver: ``handle`` on the host its lease names (:func:`lease_holder`).

    An unreadable lease leaves the handle as it is: the lease's own evidence says what is wrong with it.
    """
    return lease_holder(handle, _readable_lease(checkpoint))


def wait_while_driver_alive(
    handle: DriverHandle, checkpoint: CheckpointReader | None, timeout_s: float, poll_s: float = 2.0, *,
    here: HostIdentity | None = None, fetch: Fetch = http_get,
) -> DriverObservation:
    """Observe until no source sees a driver of the pipeline alive, or ``timeout_s`` passes; the last observation.

    A new submission's wait (docs/design-notes.md, note 37): a driver may start when nothing is
    alive, whether the earlier one is positively gone or was never seen (a first attempt has no
    evidence of any kind). From another host than the earlier attempt's, its lease and the cluster
    manager are what still see it.
    """
    policy = RetryPolicy("no live driver of the pipeline", timeout_s=timeout_s, first_delay_s=poll_s,
                         max_delay_s=poll_s)
    return policy.poll(lambda: observe_driver_anywhere(handle, checkpoint, here=here, fetch=fetch),
                       until=lambda seen: seen.liveness is not Liveness.ALIVE,
                       what=f"end of the driver before {handle.token}").value


def _readable_lease(checkpoint: CheckpointReader | None) -> DriverLease | None:
    """The checkpoint's lease; ``None`` when there is none, or it cannot be read (its evidence says why)."""
    return None if checkpoint is None else _read_lease(checkpoint).lease


def _live_lease_mark(checkpoint: CheckpointReader | None) -> tuple[str, int] | None:
    """``(token, sequence)`` of the checkpoint's lease while it is not released; ``None`` otherwise or unreadable."""
    lease = _readable_lease(checkpoint)
    return None if lease is None or lease.released else (lease.token, lease.sequence)


def wait_until_gone_unless_renewed(
    handle: DriverHandle, checkpoint: CheckpointReader | None, timeout_s: float, poll_s: float = 2.0, *,
    here: HostIdentity | None = None, fetch: Fetch = http_get,
) -> DriverObservation:
    """:func:`wait_until_driver_gone` for a caller that cannot signal the driver (another host than its own).

    Returns early, not gone, once the lease is renewed during the wait: a driver that renews its
    lease runs, and waiting cannot end it when nobody stops it. A SIGKILLed driver renews nothing:
    its lease expires within the wait when ``timeout_s`` exceeds its ttl plus 10 s.
    """
    first = _live_lease_mark(checkpoint)
    renewed = False

    def settled(seen: DriverObservation) -> bool:
        nonlocal renewed
        if seen.liveness is Liveness.GONE:
            return True
        mark = _live_lease_mark(checkpoint)
        renewed = first is not None and mark is not None and mark != first
        return renewed

    policy = RetryPolicy("positive evidence that the driver is gone", timeout_s=timeout_s, first_delay_s=poll_s,
                         max_delay_s=poll_s)
    seen = policy.poll(lambda: observe_driver_anywhere(handle, checkpoint, here=here, fetch=fetch),
                       until=settled, what=f"end of driver {handle.token}").value
    if renewed and seen.liveness is not Liveness.GONE:
        return seen.model_copy(update={"evidence": f"{seen.evidence}; the lease was renewed while this host "
                                                   "waited: the driver runs"})
    return seen
