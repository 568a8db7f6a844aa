"""Lag per input partition, judged over the window by rules in the spirit of LinkedIn Burrow.

For partition ``p`` take the window's samples that include it, oldest first: time ``t_i``,
committed offset ``o_i`` (``None``: the group has none), marker batch ``b_i`` and
``lag_i = max(0, LSO_i - o_i)`` (:attr:`InputPartitionSample.lag`). A *commit* between two
samples is a change of ``(o, b)``: the sink commits every input partition in every batch with
that batch's marker, so a new marker shows a commit even when the offset did not move (Kafka
reports no commit timestamps, which Burrow's window is built from; the marker replaces them
here). ``n`` is the number of samples and ``span = t_n - t_1``. The first rule that matches
decides, in the order of :data:`LAG_RULES`:

====== ========================================================================================
OK     :func:`caught_up`: ``lag_i == 0`` for some ``i`` (Burrow rule 1).
REWIND :func:`rewound` (``n >= 2``): ``o_i < o_(i-1)`` for some ``i``, or an offset disappeared:
       something other than the sink reset the group (Burrow rule 2).
OK     :func:`between_runs`: the newest sample says no run of an ``available_now`` pipeline is
       active (its driver's lease is released, expired or absent): the input waits for the next run,
       and nothing is expected to commit until then.
OK     :func:`batch_advancing`: no commit in the window, but the batch in flight advanced (its spill or
       its open transaction grew) less than ``stop_after_ms`` before the newest sample
       (:mod:`.in_flight`): a batch longer than the window.
STOP   :func:`stopped` (``n >= 2``): no commit in the window and ``span >= stop_after_ms``
       (Burrow rule 3, with the silence measured against a threshold derived from the trigger
       interval and batch budget instead of the window's own commit spacing, which this
       window cannot see).
STALL  :func:`stalled` (``n >= min_samples``): at least one commit, but ``o`` never changed
       (Burrow rule 4).
WARN   :func:`lagging` (``n >= min_samples``): ``o`` moved, but ``lag_i >= lag_(i-1)`` at every
       step: the job works but does not catch up (Burrow rule 5, "lag not decreasing").
OK     :func:`consuming`: otherwise (including a window too short for the trend rules).
====== ========================================================================================

OK maps to HEALTHY, WARN to DEGRADED, STALL, STOP and REWIND to UNHEALTHY
(:attr:`LagStatus.health`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from airflow_provider_eos.core.health.in_flight import BatchAdvance, last_advance
from airflow_provider_eos.core.health.samples import HealthSample, InputPartitionSample
from airflow_provider_eos.core.health.statuses import LagStatus
from airflow_provider_eos.core.health.thresholds import HealthThresholds
from airflow_provider_eos.core.topic_partition import PartitionRow, TopicPartition
from airflow_provider_eos.core.transactions import format_age

__all__ = [
    "LAG_RULES",
    "Judgement",
    "LagRule",
    "PartitionHistory",
    "PartitionLag",
    "batch_advancing",
    "between_runs",
    "caught_up",
    "consuming",
    "judge_partition",
    "lagging",
    "partition_lags",
    "rewound",
    "stalled",
    "stopped",
]


@dataclass(frozen=True)
class PartitionHistory:
    """One input partition's samples in the window, oldest first, and what the rules read from them.

    :param tp: the partition.
    :param times: each sample's time (ms since the epoch).
    :param points: the partition in each sample.
    :param run_active: the newest sample's :attr:`HealthSample.run_active` (``False``: an
        ``available_now`` pipeline between runs).
    :param advance: the window's newest evidence that the batch in flight advanced (:mod:`.in_flight`).
    """

    tp: TopicPartition
    times: tuple[int, ...]
    points: tuple[InputPartitionSample, ...]
    run_active: bool | None = None
    advance: BatchAdvance | None = None

    @classmethod
    def of(
        cls, tp: TopicPartition, history: Sequence[tuple[int, InputPartitionSample]], run_active: bool | None = None,
        advance: BatchAdvance | None = None,
    ) -> PartitionHistory:
        """Build from ``(time, sample)`` pairs, oldest first."""
        return cls(tp, tuple(t for t, _ in history), tuple(p for _, p in history), run_active, advance)

    @property
    def n(self) -> int:
        """Samples that include the partition."""
        return len(self.points)

    @property
    def span_ms(self) -> int:
        """Time between the oldest and the newest of them."""
        return self.times[-1] - self.times[0]

    @property
    def lags(self) -> list[int]:
        """The lag in each sample."""
        return [p.lag for p in self.points]

    @property
    def newest(self) -> InputPartitionSample:
        """The partition in the newest sample."""
        return self.points[-1]

    @property
    def commits(self) -> int:
        """Commits between the samples: changes of (offset, marker)."""
        return sum(
            1
            for prev, cur in itertools.pairwise(self.points)
            if (prev.committed, prev.marker_batch) != (cur.committed, cur.marker_batch)
        )

    @property
    def moved(self) -> bool:
        """Whether the committed offset changed between any two samples."""
        return any(prev.committed != cur.committed for prev, cur in itertools.pairwise(self.points))


class Judgement(NamedTuple):
    """A rule's verdict on one partition: the status and one sentence with the values."""

    status: LagStatus
    detail: str


#: A lag rule: a judgement when it applies to the partition, ``None`` when the next rule decides.
LagRule = Callable[[PartitionHistory, HealthThresholds], Judgement | None]


def caught_up(h: PartitionHistory, th: HealthThresholds) -> Judgement | None:
    """OK when the lag was 0 in some sample: the group caught up within the window (Burrow rule 1)."""
    if 0 not in h.lags:
        return None
    return Judgement(LagStatus.OK, "caught up" if h.lags[-1] == 0 else "lag was 0 within the window")


def rewound(h: PartitionHistory, th: HealthThresholds) -> Judgement | None:
    """REWIND when the offset went backwards or disappeared: something other than the sink reset the group.

    Burrow rule 2; it needs two samples, which pairs of one sample never give.
    """
    for prev, cur in itertools.pairwise(h.points):
        if prev.committed is not None and (cur.committed is None or cur.committed < prev.committed):
            after = "nothing" if cur.committed is None else str(cur.committed)
            return Judgement(
                LagStatus.REWIND,
                f"the group's offset went from {prev.committed} to {after}: something other than "
                "the sink reset or deleted it",
            )
    return None


def between_runs(h: PartitionHistory, th: HealthThresholds) -> Judgement | None:
    """OK when no run of an ``available_now`` pipeline is active: its input waits for the next run."""
    if h.run_active is not False:
        return None
    return Judgement(LagStatus.OK, f"idle between runs: {h.lags[-1]} record(s) wait for the next run")


def batch_advancing(h: PartitionHistory, th: HealthThresholds) -> Judgement | None:
    """OK when no commit happened in the window but the batch in flight advanced within ``stop_after_ms``.

    A batch longer than the window commits nothing in it; its spill or its open transaction growing
    is the progress the commit will show (:mod:`.in_flight`).
    """
    if h.advance is None or h.commits or h.advance.ago_ms(h.times[-1]) >= th.stop_after_ms:
        return None
    return Judgement(
        LagStatus.OK,
        f"no commit for {format_age(h.span_ms)}, but batch {h.advance.batch} advanced within the last "
        f"{format_age(h.advance.ago_ms(h.times[-1]))} ({h.advance.evidence})",
    )


def stopped(h: PartitionHistory, th: HealthThresholds) -> Judgement | None:
    """STOP when input waits and no commit happened in a window of at least ``stop_after_ms`` (Burrow rule 3)."""
    if h.n < 2 or h.commits or h.span_ms < th.stop_after_ms:
        return None
    return Judgement(
        LagStatus.STOP,
        f"no commit for {format_age(h.span_ms)} (stop after {format_age(th.stop_after_ms)}) "
        f"while {h.lags[-1]} record(s) wait",
    )


def stalled(h: PartitionHistory, th: HealthThresholds) -> Judgement | None:
    """STALL when batches commit but this partition's offset, with data waiting, never moves (Burrow rule 4)."""
    if h.n < th.min_samples or not h.commits or h.moved:
        return None
    return Judgement(
        LagStatus.STALL,
        f"{h.commits} commit(s) in the window but the offset stays at {h.newest.committed} "
        f"while {h.lags[-1]} record(s) wait",
    )


def lagging(h: PartitionHistory, th: HealthThresholds) -> Judgement | None:
    """WARN when the offset moves but the lag never decreases: the job works but does not catch up (Burrow rule 5)."""
    lags = h.lags
    if h.n < th.min_samples or not h.moved or any(cur < prev for prev, cur in itertools.pairwise(lags)):
        return None
    return Judgement(LagStatus.WARN, f"the offset moves but the lag never decreased ({lags[0]} -> {lags[-1]})")


def consuming(h: PartitionHistory, th: HealthThresholds) -> Judgement:
    """OK when no other rule applies; the detail says what the window could not judge yet."""
    if h.commits == 0 and h.n >= 2:
        return Judgement(
            LagStatus.OK, f"no commit for {format_age(h.span_ms)} yet (stop after {format_age(th.stop_after_ms)})"
        )
    if h.n < th.min_samples:
        return Judgement(LagStatus.OK, f"{h.n} of {th.min_samples} samples: trend not judged yet")
    return Judgement(LagStatus.OK, "consuming")


#: The rules in the order they are tried; :func:`consuming` decides when none applies.
LAG_RULES: tuple[LagRule, ...] = (caught_up, rewound, between_runs, batch_advancing, stopped, stalled, lagging)


class PartitionLag(PartitionRow):
    """The lag evaluation of one input partition.

    :param tp: the partition.
    :param status: the rule that decided.
    :param committed: the group's committed offset in the newest sample.
    :param marker_batch: the batch its marker names.
    :param lso: the newest LSO.
    :param lag: the newest lag.
    :param first_lag: the lag in the oldest sample of the window.
    :param samples: samples that include this partition.
    :param commits: commits seen between those samples.
    :param detail: one sentence naming the rule and the values.
    """

    status: LagStatus
    committed: int | None
    marker_batch: int | None
    lso: int
    lag: int
    first_lag: int
    samples: int
    commits: int
    detail: str


def judge_partition(history: PartitionHistory, th: HealthThresholds) -> PartitionLag:
    """Apply :data:`LAG_RULES` to one partition; the first that applies decides."""
    judgement = next(
        (found for rule in LAG_RULES if (found := rule(history, th)) is not None), None
    ) or consuming(history, th)
    newest = history.newest
    lags = history.lags
    return PartitionLag(
        tp=history.tp,
        status=judgement.status,
        committed=newest.committed,
        marker_batch=newest.marker_batch,
        lso=newest.lso,
        lag=lags[-1],
        first_lag=lags[0],
        samples=history.n,
        commits=history.commits,
        detail=judgement.detail,
    )


def partition_lags(samples: Sequence[HealthSample], th: HealthThresholds) -> tuple[PartitionLag, ...]:
    """Judge every input partition of the newest sample over the window, ordered by partition.

    :param samples: the window, oldest first (not empty).
    """
    history: dict[TopicPartition, list[tuple[int, InputPartitionSample]]] = {}
    for sample in samples:
        for item in sample.inputs:
            history.setdefault(item.tp, []).append((sample.taken_at_ms, item))
    # A partition gone from the newest sample (a topic deleted, a pattern that no longer matches) is not judged.
    current = {item.tp for item in samples[-1].inputs}
    run_active = samples[-1].run_active
    advance = last_advance(samples)
    return tuple(
        judge_partition(PartitionHistory.of(tp, history[tp], run_active, advance), th)
        for tp in sorted(history)
        if tp in current
    )
