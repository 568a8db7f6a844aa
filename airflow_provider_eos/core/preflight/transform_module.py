"""EOS319: the spec names its transform by the module's current path.

The example transforms moved from ``airflow_provider_eos.jobs`` to the top-level package
``spark_jobs``. A spec that names the old path still runs (the job resolves it through
:func:`~airflow_provider_eos.core.transform_reference.resolve_transform`); this WARNING says what
to write instead, before the old path is removed.
"""

from __future__ import annotations

from airflow_provider_eos.core.preflight.facts import PreflightFacts
from airflow_provider_eos.core.preflight.rule import Outcome, Severity, failed, passed, rule
from airflow_provider_eos.core.transform_reference import resolve_transform

__all__: list[str] = []


@rule(
    "EOS319",
    Severity.WARNING,
    "the transform is named by its current module path",
    "name the transform by its current path: spark_jobs.transforms.<name>:transform instead of "
    "airflow_provider_eos.jobs.transforms.<name>:transform",
)
def _current_module_path(facts: PreflightFacts) -> Outcome:
    reference = facts.spec.transform
    if reference is None:
        return passed("the identity transform")
    resolved = resolve_transform(reference)
    if resolved.deprecation is not None:
        return failed(resolved.deprecation, fix=f"write transform: {resolved.current} in the spec")
    return passed(f"transform {reference!r}")
