"""One verdict from every source of evidence about the driver (pure): alive wins, gone needs a source that holds.

The sources (docs/design-notes.md, note 35): the host's process table (:func:`~.driver.observe_driver`),
the driver's lease in the checkpoint (:func:`~.driver_lease.judge_lease`) and the cluster manager's
record (:mod:`.cluster_records`). Each says ALIVE, GONE or nothing (UNKNOWN). The rules, first
match wins (:data:`RULES`):

1. ``alive``: any source sees the driver alive -> ALIVE. One sign of life outweighs every sign of
   death: the cost of waiting is a slower recovery, the cost of acting is fencing a live job.
2. ``gone``: a source that holds for the handle's master and deploy mode says GONE -> GONE.
3. ``no evidence``: otherwise UNKNOWN, which recovery refuses.

Which source holds where (:func:`holds`): the process table for a client-mode driver (it needs the
observer on the driver's host, which :func:`~.driver.observe_driver` checks); the lease everywhere
(the driver fences itself); the standalone master for its client-mode applications; the
ResourceManager for YARN in both deploy modes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from airflow_provider_eos.core.driver import DriverHandle, DriverObservation, Evidence, EvidenceSource, Liveness

__all__ = ["RULES", "combine_evidence", "holds"]


def holds(source: EvidenceSource, handle: DriverHandle) -> bool:
    """Whether a GONE from ``source`` may count for a driver submitted as ``handle`` records."""
    client = handle.deploy_mode != "cluster"
    if source is EvidenceSource.PROCESS_TABLE:
        return client
    if source is EvidenceSource.LEASE:
        return True
    if source is EvidenceSource.STANDALONE_MASTER:
        return client and handle.master.startswith("spark://")
    return handle.master.startswith("yarn")


def _alive(handle: DriverHandle, evidence: Sequence[Evidence]) -> bool:
    return any(each.says is Liveness.ALIVE for each in evidence)


def _gone(handle: DriverHandle, evidence: Sequence[Evidence]) -> bool:
    return any(each.says is Liveness.GONE and holds(each.source, handle) for each in evidence)


def _always(handle: DriverHandle, evidence: Sequence[Evidence]) -> bool:
    return True


#: ``(name, applies, verdict)``, first match wins.
RULES: tuple[tuple[str, Callable[[DriverHandle, Sequence[Evidence]], bool], Liveness], ...] = (
    ("alive", _alive, Liveness.ALIVE),
    ("gone", _gone, Liveness.GONE),
    ("no evidence", _always, Liveness.UNKNOWN),
)


def _sentence(handle: DriverHandle, each: Evidence) -> str:
    said = {Liveness.ALIVE: "ALIVE", Liveness.GONE: "GONE", Liveness.UNKNOWN: "no evidence"}[each.says]
    if each.says is Liveness.GONE and not holds(each.source, handle):
        said += f" (does not count for {handle.master} {handle.deploy_mode} mode)"
    return f"{each.source.value}: {said}, {each.detail}"


def combine_evidence(handle: DriverHandle, evidence: Sequence[Evidence]) -> DriverObservation:
    """The verdict of :data:`RULES` on what the sources said, with a sentence naming each source and what it said."""
    name, verdict = next((name, verdict) for name, applies, verdict in RULES if applies(handle, evidence))
    processes = tuple(process for each in evidence for process in each.processes)
    sentences = "; ".join(_sentence(handle, each) for each in evidence) or "no source was asked"
    return DriverObservation(
        token=handle.token, liveness=verdict, processes=processes, sources=tuple(evidence),
        evidence=f"{verdict.value} (rule {name!r}): {sentences}",
    )
