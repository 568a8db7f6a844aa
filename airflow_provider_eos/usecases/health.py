"""Health: sample the pipeline and evaluate the lag rules and signals over the samples (docs/architecture.md).

The samples are taken by :func:`airflow_provider_eos.kafka.health_probe.probe` (I/O only); the
rules are :mod:`airflow_provider_eos.core.health`. :func:`evaluate` is also what the health
sensor and its trigger call on their own window of samples.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.errors import AclMissingError
from airflow_provider_eos.core.health import (
    DEFAULT_MAX_SAMPLES,
    HealthReport,
    HealthStatus,
    HealthThresholds,
    LagWindow,
    RunInput,
)
from airflow_provider_eos.core.health import evaluate as evaluate_window
from airflow_provider_eos.core.progress import say
from airflow_provider_eos.kafka.health_probe import HealthProbeError, probe, probe_run_input
from airflow_provider_eos.usecases.result import Outcome, UseCaseResult
from airflow_provider_eos.usecases.roles import role_refusal, runs_as

if TYPE_CHECKING:
    from airflow_provider_eos.core.health import HealthSample
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.usecases.clients import PipelineClients

__all__ = ["HealthOutcome", "evaluate", "health", "run_input"]

# What to do about each signal that is not healthy, in the order the findings come (worst first).
_ADVICE = {
    "lag": "check that the job runs and keeps up with its input (a STOP or STALL lag means it does not commit)",
    "commit_age": "check that the job runs: its checkpoint has not committed for longer than the threshold",
    "hanging": "abort the hanging transactions once the job is gone (eos abort --spec FILE --execute)",
    "lingering": "abort the lingering transactions once the job is gone (eos abort --spec FILE --execute)",
}


class HealthOutcome(UseCaseResult[HealthReport]):
    """The health report; a finding when UNHEALTHY (or, strictly, anything but HEALTHY)."""


def sample(clients: PipelineClients) -> HealthSample:
    """One health sample as the health role takes it (the sensor's and the trigger's): a refusal names its grant.

    Asks first whether any broker answers (:meth:`PipelineClients.require_kafka`, as :func:`health` and
    every use case do): a cluster that is down fails the sample within ``connect_timeout_s`` with the
    sentence naming the brokers, not after each of the probe's requests timed out on its own.
    Pass a new :class:`PipelineClients` per sample: the answer is cached in it.

    :raises KafkaUnreachableError: no broker answered within the clients' ``connect_timeout_s``.
    :raises AclMissingError: the health principal lacks an ACL of its set.
    """
    spec = clients.spec
    try:
        clients.require_kafka()
        return probe(spec, storage_options=clients.storage_options, timeout_s=clients.timeout_s)
    except AclMissingError as refused:
        raise role_refusal(refused, "health", spec) from refused.__cause__


@runs_as("job")
def run_input(clients: PipelineClients) -> RunInput:
    """The input a run that starts now has to process: each input partition's end, read as the job's principal.

    The submit task reads it before it starts an ``available_now`` job; a ``wait_healthy`` watch of the
    run compares the sink group with it (:func:`~airflow_provider_eos.core.health.watch_outcome`), not
    with input that arrives after the job took its own ends.

    :raises KafkaUnreachableError: no broker answered within the clients' ``connect_timeout_s``.
    :raises HealthProbeError: if metadata or offsets cannot be read.
    :raises AclMissingError: the job's principal may not describe an input topic.
    """
    clients.require_kafka()
    return probe_run_input(clients.spec, clients.admin, timeout_s=clients.timeout_s)


def evaluate(
    spec: PipelineSpec, window: LagWindow, *, thresholds: Mapping[str, Any] | HealthThresholds | None = None
) -> HealthReport:
    """Evaluate the window with the spec's thresholds (optionally overridden).

    :param spec: the pipeline.
    :param window: the samples.
    :param thresholds: a full :class:`HealthThresholds`, or a mapping of fields overriding those
        :meth:`HealthThresholds.from_spec` derives.
    :raises HealthError: if the window is empty or an override is invalid.
    """
    if not isinstance(thresholds, HealthThresholds):
        thresholds = HealthThresholds.from_spec(spec).with_overrides(thresholds)
    return evaluate_window(
        window, thresholds, pipeline=spec.name, transactional_id_prefix=spec.transactional_id_prefix
    )


def _next_step(report: HealthReport) -> str:
    if not report.problems:
        return "Nothing to do: the pipeline is healthy."
    steps: list[str] = []
    for finding in report.problems:
        if finding.signal == "verification" and report.verification is not None:
            step = report.verification.next_step or f"verification says {report.verification.verdict}"
        else:
            step = _ADVICE.get(finding.signal, f"look at the {finding.signal} finding above")
        if step not in steps:
            steps.append(step)
    return " Then ".join(s[0].upper() + s[1:].rstrip(".") + "." for s in steps)


@runs_as("health")
def health(
    clients: PipelineClients,
    *,
    samples: int = 1,
    interval_s: float = 5.0,
    thresholds: Mapping[str, Any] | HealthThresholds | None = None,
    strict: bool = False,
    max_samples: int = DEFAULT_MAX_SAMPLES,
) -> HealthOutcome:
    """Take ``samples`` samples ``interval_s`` apart and evaluate them.

    One sample judges the commit age, pinned partitions, lingering transactions and the
    verdict; the lag trends and hanging need several samples spanning the thresholds.

    :param thresholds: overrides of the thresholds derived from the spec (see :func:`evaluate`).
    :param strict: DEGRADED is a finding too (by default only UNHEALTHY is).
    :raises HealthProbeError: if ``samples`` < 1, or metadata or offsets cannot be read.
    :raises HealthError: if a threshold override is invalid.
    :raises KafkaUnreachableError: if no broker answers within the clients' ``connect_timeout_s``.
    """
    spec = clients.spec
    if samples < 1:
        raise HealthProbeError(f"samples is {samples}", fix="take at least one sample")
    # Checked before sampling: a mistyped override must not cost the samples' wait first.
    if not isinstance(thresholds, HealthThresholds):
        thresholds = HealthThresholds.from_spec(spec).with_overrides(thresholds)
    clients.require_kafka()
    window = LagWindow(max_samples=max(max_samples, samples))
    for index in range(samples):
        if index:
            say(f"health: sample {index} of {samples} taken; the next in {interval_s:g} s")
            time.sleep(interval_s)
        window.add(probe(spec, storage_options=clients.storage_options, timeout_s=clients.timeout_s))
    report = evaluate(spec, window, thresholds=thresholds)
    healthy = report.status is HealthStatus.HEALTHY if strict else report.is_healthy
    return HealthOutcome(
        use_case="health",
        pipeline=spec.name,
        outcome=Outcome.OK if healthy else Outcome.FINDING,
        summary=f"pipeline {spec.name!r} is {report.status.value}",
        next_step=_next_step(report),
        report=report,
    )
