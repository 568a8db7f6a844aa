"""Pre-flight: gather the facts live and run the rule catalog before a pipeline starts (DESIGN.md section 4)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_eos.core.preflight import DEFAULT_LONGEST_EXPECTED_PAUSE_MS, PreflightReport, evaluate
from airflow_provider_eos.kafka.cluster_facts import gather_facts
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.result import Outcome, UseCaseResult

if TYPE_CHECKING:
    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["PreflightOutcome", "preflight"]


class PreflightOutcome(UseCaseResult[PreflightReport]):
    """The pre-flight report; a finding when a rule of severity ERROR failed (warnings do not fail)."""


def preflight(
    clients: PipelineClients,
    *,
    specs_dir: str | Path | None = None,
    other_specs: Iterable[PipelineSpec] | None = None,
    master: str | None = None,
    longest_expected_pause_ms: int = DEFAULT_LONGEST_EXPECTED_PAUSE_MS,
) -> PreflightOutcome:
    """Run the whole catalog against the live cluster, the checkpoint and the other pipelines.

    :param specs_dir: the folder of every pipeline's spec, to check that prefix, group,
        checkpoint and name are not shared; ``None`` leaves those rules "not checked".
    :param other_specs: the other pipelines, when they are at hand already (instead of ``specs_dir``).
    :param master: the Spark master URL the job will run on; ``None``: ``spark.master`` of the
        spec's ``spark_conf``, else that rule is "not checked".
    :param longest_expected_pause_ms: how long the pipeline may be stopped and still resume.
    :raises PreflightError: if the cluster cannot be described at all.
    """
    spec = clients.spec
    facts = gather_facts(
        spec,
        specs_dir=specs_dir,
        other_specs=other_specs,
        master=master,
        storage_options=clients.storage_options,
        longest_expected_pause_ms=longest_expected_pause_ms,
        timeout_s=clients.timeout_s,
    )
    report = evaluate(facts)
    if report.ok:
        summary = f"pre-flight of pipeline {spec.name!r} passed"
        next_step = "Nothing to do: the pipeline may start." + (
            " Read the warnings above." if report.warnings else ""
        )
    else:
        failed = ", ".join(f"{f.code} {f.title}" for f in report.errors)
        summary = f"pre-flight of pipeline {spec.name!r} failed: {failed}"
        next_step = "Apply the fix of each failed ERROR rule (listed under 'Fixes:'), then run the pre-flight again."
    return PreflightOutcome(
        use_case="preflight",
        pipeline=spec.name,
        outcome=Outcome.OK if report.ok else Outcome.FINDING,
        summary=summary,
        next_step=next_step,
        report=report,
    )
