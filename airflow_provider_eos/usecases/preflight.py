"""Pre-flight: gather the facts live and run the rule catalog before a pipeline starts (docs/preflight-rules.md)."""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_eos.core.errors import EosError, PrerequisiteError
from airflow_provider_eos.core.preflight import (
    DEFAULT_LONGEST_EXPECTED_PAUSE_MS,
    PreflightError,
    PreflightFacts,
    PreflightReport,
    evaluate,
)
from airflow_provider_eos.core.transform_reference import resolve_transform
from airflow_provider_eos.core.transform_traits import TransformTraits, traits_from_source
from airflow_provider_eos.core.writers_choice import read_writers_choice
from airflow_provider_eos.devstack.jars import executor_writer_jar
from airflow_provider_eos.kafka.cluster_facts import gather_facts
from airflow_provider_eos.kafka.settings.librdkafka import check_librdkafka_settings
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.result import Outcome, UseCaseResult
from airflow_provider_eos.usecases.roles import runs_as

if TYPE_CHECKING:
    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["PreflightOutcome", "preflight", "read_transform_traits", "with_writers_facts"]

log = logging.getLogger(__name__)


class PreflightOutcome(UseCaseResult[PreflightReport]):
    """The pre-flight report; a finding when a rule of severity ERROR failed (warnings do not fail)."""


@runs_as("job")
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
    :raises KafkaUnreachableError: if no broker answers within the clients' ``connect_timeout_s``.
    :raises SpecError: if librdkafka refuses a ``kafka`` setting (checked before any client starts).
    """
    spec = clients.spec
    # Before the first client: librdkafka refuses such a setting when a client is made, naming no spec field.
    check_librdkafka_settings(spec)
    clients.require_kafka()
    facts = gather_facts(
        spec,
        specs_dir=specs_dir,
        other_specs=other_specs,
        master=master,
        storage_options=clients.storage_options,
        longest_expected_pause_ms=longest_expected_pause_ms,
        timeout_s=clients.timeout_s,
    )
    report = evaluate(with_writers_facts(facts, clients))
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


def read_transform_traits(reference: str | None) -> TransformTraits:
    """What the spec's transform declares about itself, read from its module's source without importing it.

    The module is located with :func:`importlib.util.find_spec`, which imports its parent packages
    (their ``__init__``) but not the module: transform modules import PySpark at their top, which
    the Airflow worker need not have, and importing them would run a user's code there.

    :param reference: the spec's ``transform`` (``module:function``; ``None``: the identity). A moved
        module path is read where the module lives now (:func:`~airflow_provider_eos.core.transform_reference.
        resolve_transform`); the rule EOS319 reports the old path.
    :raises PreflightError: if the module cannot be found or its source read, or the function is
        not defined at the module's top level (then only the job, with Spark, can tell).
    """
    if reference is None:
        return TransformTraits(reference=None, stateful=False, evidence="the identity transform")
    resolved = resolve_transform(reference)
    module = resolved.module
    fix = "ship the transform's module where pre-flight runs, or rely on the job's check of the plan at start"
    try:
        found = importlib.util.find_spec(module)
        # Source loaders and zipimport (a --py-files zip) both answer get_source.
        get_source = None if found is None else getattr(found.loader, "get_source", None)
        source = None if get_source is None else get_source(module)
    except (ImportError, ValueError, AttributeError, OSError) as exc:
        raise PreflightError(f"transform module {module!r} cannot be read: {exc}", fix=fix) from exc
    if found is None or source is None:
        raise PreflightError(f"transform module {module!r} is not importable here or has no source", fix=fix)
    traits = traits_from_source(reference, source, found.origin or module)
    if traits is None:
        raise PreflightError(
            f"transform {reference!r} is not defined at the top level of {found.origin or module}, so its "
            "stateful_transform marker cannot be read without importing it",
            fix=fix,
        )
    return traits


def with_writers_facts(facts: PreflightFacts, clients: PipelineClients) -> PreflightFacts:
    """Add what the writers rules (EOS313-EOS318) read: the checkpoint's writers record, the transform's
    traits and the JVM executor writer's jar.

    A fact that cannot be read stays ``None`` with the reason in ``unavailable``, so its rules
    report "not checked" and the others still run.
    """
    unavailable = dict(facts.unavailable)
    checkpoint = facts.checkpoint
    if checkpoint is not None and checkpoint.exists:
        try:
            checkpoint = dataclasses.replace(checkpoint, writers_choice=read_writers_choice(clients.checkpoint))
        except (EosError, OSError) as exc:
            unavailable["writers_choice"] = exc.message if isinstance(exc, EosError) else f"{type(exc).__name__}: {exc}"
            log.warning("pre-flight: could not read the writers record: %s", unavailable["writers_choice"])
    traits = None
    try:
        traits = read_transform_traits(clients.spec.transform)
    except PreflightError as exc:
        unavailable["transform_traits"] = exc.message
        log.warning("pre-flight: could not read the transform's traits: %s", exc.message)
    jar = None
    try:
        jar = str(executor_writer_jar(build=False))
    except PrerequisiteError as exc:
        unavailable["executor_writer_jar"] = exc.message
    return dataclasses.replace(facts, checkpoint=checkpoint, transform_traits=traits, executor_writer_jar=jar,
                               unavailable=unavailable)
