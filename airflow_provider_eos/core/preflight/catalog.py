"""The catalog: every rule family registered, in code order, and :func:`evaluate` to run it."""

from __future__ import annotations

from collections.abc import Sequence

# Importing a family registers its rules; the names are not used here.
from airflow_provider_eos.core.preflight import (  # noqa: F401
    broker_protocol,
    cluster_topics,
    internal_topics,
    naming_ownership,
    security,
    spark_checkpoint,
    timeouts,
    transform_module,
    writers,
)
from airflow_provider_eos.core.preflight.facts import PreflightFacts
from airflow_provider_eos.core.preflight.report import PreflightReport
from airflow_provider_eos.core.preflight.rule import Rule, registered_rules

__all__ = ["RULES", "evaluate"]

#: The catalog, by code.
RULES: tuple[Rule, ...] = registered_rules()


def evaluate(facts: PreflightFacts, rules: Sequence[Rule] = RULES) -> PreflightReport:
    """Run ``rules`` (default: the whole catalog) on ``facts``.

    :param facts: what is known about the pipeline and its cluster.
    :param rules: the rules to run, reported in the given order.
    """
    return PreflightReport(pipeline=facts.spec.name, findings=tuple(r.evaluate(facts) for r in rules))
