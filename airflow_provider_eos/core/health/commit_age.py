"""The commit age signal: how long the job has had input to commit without committing it.

A stateless query runs no batch without new data, so an old newest ``commits/N`` alone says
nothing: a stream idle for an hour has an hour-old commit, and the first record after the idle
spell waits for the next trigger without anything being wrong. What is judged is the *stall*,
the shortest of:

* the age of the newest commit (the job committed since; with no commit at all, the window's span);
* how long the oldest waiting input has waited (:func:`input_waiting_ms`): per input partition
  with lag in the newest sample, from the first sample of the trailing run of samples with lag
  (the sample before it had none, so the input arrived after it). When the partition had lag in
  every sample of the window, the window's span is a lower bound and the brokers' record
  timestamps (the sample's ``waiting_ms``, read with ListOffsets by timestamp) say whether
  input older than the thresholds waits; without them the wait is unknown and the commit age decides;
* for an ``available_now`` run, how long its driver has held its lease: a run that has just
  started had no chance to commit yet, however old the input it found;
* how long ago the batch in flight was last seen advancing (its spill or its open transaction grew,
  :mod:`.in_flight`): a batch longer than the thresholds that keeps writing is progress.

With no lag in the newest sample the pipeline is idle: HEALTHY. Otherwise a stall
``>= stop_after_ms`` is UNHEALTHY, ``>= warn_after_ms`` DEGRADED (with no commit at all, DEGRADED
below ``stop_after_ms``: the job has not committed its first batch). Between two runs of an
``available_now`` pipeline (the sample says no run is active: its driver's lease is released,
expired or absent) nothing commits by design and input waits for the next run: HEALTHY, "idle
between runs".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from airflow_provider_eos.core.health.findings import Finding
from airflow_provider_eos.core.health.in_flight import last_advance
from airflow_provider_eos.core.health.samples import HealthSample
from airflow_provider_eos.core.health.statuses import HealthStatus
from airflow_provider_eos.core.health.thresholds import HealthThresholds
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import format_age

__all__ = ["CHECKPOINT_SUBJECT", "InputWait", "commit_age_finding", "input_wait", "input_waiting_ms"]

#: The subject of the commit age finding.
CHECKPOINT_SUBJECT = "checkpoint commits/"


class InputWait(NamedTuple):
    """How long, at least, the oldest waiting input has waited, and what says so."""

    ms: int
    evidence: str


def input_wait(samples: Sequence[HealthSample]) -> InputWait | None:
    """How long, at least, the oldest input waiting in the newest sample has waited; ``None``: unknown.

    0 when no input waits. See the module docstring for how each partition's wait is read.

    :param samples: the window, oldest first (not empty).
    """
    latest = samples[-1]
    history: dict[TopicPartition, list[tuple[int, int]]] = {}
    for sample in samples:
        for item in sample.inputs:
            history.setdefault(item.tp, []).append((sample.taken_at_ms, item.lag))
    longest = InputWait(0, "no input waits")
    for item in latest.inputs:
        if item.lag == 0:
            continue
        points = history[item.tp]
        first = len(points) - 1
        while first > 0 and points[first - 1][1] > 0:
            first -= 1
        waited = latest.taken_at_ms - points[first][0]
        if first > 0:
            before = format_age(latest.taken_at_ms - points[first - 1][0])
            found = InputWait(waited, f"the sample {before} ago saw no input waiting on {item.tp}")
        elif item.waiting_ms is None:
            # Lag in every sample of the window, and no reading of the record timestamps: unknown.
            return None
        elif item.waiting_ms > waited:
            found = InputWait(item.waiting_ms, f"a record waiting on {item.tp} is older than "
                                               f"{format_age(item.waiting_ms)} (the brokers' record timestamps)")
        else:
            found = InputWait(waited, f"input has waited on {item.tp} in every sample, for {format_age(waited)}")
        longest = max(longest, found)
    return longest


def input_waiting_ms(samples: Sequence[HealthSample]) -> int | None:
    """:func:`input_wait` in milliseconds."""
    found = input_wait(samples)
    return None if found is None else found.ms


def _finding(status: HealthStatus, detail: str) -> Finding:
    return Finding(signal="commit_age", status=status, subject=CHECKPOINT_SUBJECT, detail=detail)


def _stall(samples: Sequence[HealthSample], wait: InputWait | None, commit: tuple[int, str],
           since: str) -> tuple[int, str]:
    """The shortest of the commit's age, the input's wait, the run's and the batch in flight's: ms and why."""
    latest = samples[-1]
    stall, why = commit
    if wait is not None and wait.ms < stall:
        stall, why = wait.ms, f"{since}, but {wait.evidence}"
    if latest.run_started_at_ms is not None:
        running = max(0, latest.taken_at_ms - latest.run_started_at_ms)
        if running < stall:
            stall, why = running, f"{since}, but this run's driver started {format_age(running)} ago"
    advance = last_advance(samples)
    if advance is not None and advance.ago_ms(latest.taken_at_ms) < stall:
        stall = advance.ago_ms(latest.taken_at_ms)
        why = f"{since}, but batch {advance.batch} advanced within the last {format_age(stall)} ({advance.evidence})"
    return stall, why


def commit_age_finding(samples: Sequence[HealthSample], th: HealthThresholds) -> Finding:
    """Judge the commit age signal at the newest sample's time (the module docstring has the rules).

    :param samples: the window, oldest first (not empty).
    """
    latest = samples[-1]
    total_lag = latest.total_lag
    if latest.last_commit_time_ms is None:
        since = "no batch committed yet"
        # No commit at all: the job has had at most the window to make one.
        age = latest.taken_at_ms - samples[0].taken_at_ms
        late = f"no batch committed in {format_age(age)}"
    else:
        # A commit "in the future" (clock skew between this host and the checkpoint store) is fresh.
        age = max(0, latest.taken_at_ms - latest.last_commit_time_ms)
        since = late = f"batch {latest.last_committed} committed {format_age(age)} ago"
    if latest.run_active is False:
        waits = f"{total_lag} input record(s) wait for the next run" if total_lag else "no input waits"
        return _finding(HealthStatus.HEALTHY, f"{since}; idle between runs (no run active: the driver's lease is "
                                              f"released, expired or absent): {waits}")
    if total_lag == 0:
        return _finding(HealthStatus.HEALTHY, f"{since}; idle: no input waits")
    wait = input_wait(samples)
    waited = None if wait is None else wait.ms
    stall, why = _stall(samples, wait, (age, late), since)
    waiting = f"while {total_lag} input record(s) wait" + (
        "" if waited is None else f", the oldest for at least {format_age(waited)}"
    )
    if stall >= th.stop_after_ms:
        return _finding(HealthStatus.UNHEALTHY, f"{why} (stop after {format_age(th.stop_after_ms)}) {waiting}: "
                                                "the job is not making progress")
    if latest.last_commit_time_ms is None:
        return _finding(HealthStatus.DEGRADED, f"no batch committed yet {waiting}")
    if stall >= th.warn_after_ms:
        return _finding(HealthStatus.DEGRADED, f"{why} (warn after {format_age(th.warn_after_ms)}) {waiting}")
    return _finding(HealthStatus.HEALTHY, f"{why}; {total_lag} input record(s) wait (warn after "
                                          f"{format_age(th.warn_after_ms)})")
