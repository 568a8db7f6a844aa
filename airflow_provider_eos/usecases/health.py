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
from airflow_provider_eos.core.transactions import to_epoch_ms
from airflow_provider_eos.kafka.health_probe import HealthProbeError, probe, probe_run_input
from airflow_provider_eos.usecases.driver_liveness import read_lease_for_gate
from airflow_provider_eos.usecases.result import Outcome, UseCaseResult
from airflow_provider_eos.usecases.roles import role_refusal, runs_as

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.core.health import HealthSample
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.usecases.clients import PipelineClients

__all__ = ["HealthOutcome", "evaluate", "health", "run_input"]

# What to do about each signal that is not healthy, in the order the findings come (worst first).
_ADVICE = {
    "lag": "check that the job runs and keeps up with its input (a STOP or STALL lag means it does not commit)",
    "commit_age": "check that the job runs: input has waited longer than the threshold without a commit",
    "hanging": "abort the hanging transactions once the job is gone (eos abort --spec FILE --execute)",
    "input_hanging": "have the hanging transaction on the input partition aborted: an upstream producer's, which "
    "restarting the job cannot clear and eos abort does not scan (kafka-transactions.sh find-hanging, then "
    "kafka-transactions.sh abort)",
    "lingering": "abort the lingering transactions once the job is gone (eos abort --spec FILE --execute)",
}


class HealthOutcome(UseCaseResult[HealthReport]):
    """The health report; a finding when UNHEALTHY (or, strictly, anything but HEALTHY)."""


def _thresholds(spec: PipelineSpec, thresholds: Mapping[str, Any] | HealthThresholds | None,
                latest: HealthSample | None = None) -> HealthThresholds:
    """``thresholds`` if complete, else those derived from the spec (and the brokers' maximum transaction
    timeout the newest sample read) with ``thresholds`` as overrides."""
    if isinstance(thresholds, HealthThresholds):
        return thresholds
    brokers_max = None if latest is None else latest.transaction_max_timeout_ms
    return HealthThresholds.from_spec(spec, transaction_max_timeout_ms=brokers_max).with_overrides(thresholds)


def _run_state(spec: PipelineSpec, checkpoint: CheckpointReader) -> dict[str, Any]:
    """For an ``available_now`` pipeline, whether a run is active: its driver's lease holds.

    Between two runs nothing commits and input waits for the next one, which the commit age and the
    STOP rule must not read as a stopped job (core/health/commit_age.py). The lease is read as every
    observer reads it (:func:`~airflow_provider_eos.usecases.driver_liveness.read_lease_for_gate`); none,
    or an unreadable one, is no active run. A continuously running pipeline gets nothing here.
    """
    if spec.trigger_interval_ms is not None:
        return {}
    if not checkpoint.exists():
        return {"run_active": False}
    observed_at, lease = read_lease_for_gate(checkpoint)
    if lease is None or not lease.holds_at(observed_at):
        return {"run_active": False}
    return {"run_active": True, "run_started_at_ms": to_epoch_ms(lease.started_at)}


def _probe(clients: PipelineClients, thresholds: HealthThresholds) -> HealthSample:
    """One sample: the cluster and the checkpoint (:func:`probe`), and an ``available_now`` pipeline's run state."""
    spec = clients.spec
    taken = probe(spec, storage_options=clients.storage_options, timeout_s=clients.timeout_s,
                  input_ages_ms=(thresholds.warn_after_ms, thresholds.stop_after_ms))
    run_state = _run_state(spec, clients.checkpoint)
    return taken.model_copy(update=run_state) if run_state else taken


def sample(
    clients: PipelineClients, *, thresholds: Mapping[str, Any] | HealthThresholds | None = None
) -> HealthSample:
    """One health sample as the health role takes it (the sensor's and the trigger's): a refusal names its grant.

    Asks first whether any broker answers (:meth:`PipelineClients.require_kafka`, as :func:`health` and
    every use case do): a cluster that is down fails the sample within ``connect_timeout_s`` with the
    sentence naming the brokers, not after each of the probe's requests timed out on its own.
    Pass a new :class:`PipelineClients` per sample: the answer is cached in it.

    :param thresholds: the overrides the sample will be judged with (the ages waiting input is compared with).
    :raises KafkaUnreachableError: no broker answered within the clients' ``connect_timeout_s``.
    :raises AclMissingError: the health principal lacks an ACL of its set.
    :raises HealthError: if a threshold override is invalid.
    """
    spec = clients.spec
    resolved = _thresholds(spec, thresholds)
    try:
        clients.require_kafka()
        return _probe(clients, resolved)
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
        :meth:`HealthThresholds.from_spec` derives (with the brokers' ``transaction.max.timeout.ms``
        the newest sample read, for the input partitions' hanging).
    :raises HealthError: if the window is empty or an override is invalid.
    """
    thresholds = _thresholds(spec, thresholds, window.latest)
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
    # Checked before sampling: a mistyped override must not cost the samples' wait first. Evaluated
    # again after them, with the brokers' maximum transaction timeout the samples read.
    resolved = _thresholds(spec, thresholds)
    clients.require_kafka()
    window = LagWindow(max_samples=max(max_samples, samples))
    for index in range(samples):
        if index:
            say(f"health: sample {index} of {samples} taken; the next in {interval_s:g} s")
            time.sleep(interval_s)
        window.add(_probe(clients, resolved))
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
