"""A spec's transform under the moved module path: resolved to ``spark_jobs``, with one deprecation message."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_eos.core.transform_reference import resolve_transform
from airflow_provider_eos.usecases.preflight import read_transform_traits

OLD = "airflow_provider_eos.jobs.transforms.json_enrich:transform"
NEW = "spark_jobs.transforms.json_enrich:transform"
MESSAGE = (
    f"transform {OLD!r} names the deprecated module path 'airflow_provider_eos.jobs'; the example transforms moved "
    f"to the package 'spark_jobs': write {NEW!r} in the spec (the old path still works until it is removed)"
)


def test_the_old_path_resolves_to_spark_jobs_with_the_message() -> None:
    resolved = resolve_transform(OLD)
    assert (resolved.module, resolved.function, resolved.current) == ("spark_jobs.transforms.json_enrich",
                                                                      "transform", NEW)
    assert resolved.deprecation == MESSAGE


@pytest.mark.parametrize("reference", [NEW, "my_pkg.transforms:run", "airflow_provider_eos.jobsx:f"])
def test_any_other_path_is_taken_as_written(reference: str) -> None:
    resolved = resolve_transform(reference)
    assert resolved.current == reference and resolved.deprecation is None


def test_preflight_reads_the_old_path_where_the_module_lives_now() -> None:
    traits = read_transform_traits(OLD)
    assert traits.reference == OLD and not traits.stateful
    assert "spark_jobs/transforms/json_enrich.py" in traits.evidence


def test_the_job_loads_the_old_path_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("pyspark")
    from airflow_provider_eos.spark.job import load_transform
    from spark_jobs.transforms import json_enrich

    with caplog.at_level(logging.WARNING, logger="airflow_provider_eos.job"), \
            pytest.warns(DeprecationWarning, match="names the deprecated module path 'airflow_provider_eos.jobs'"):
        function = load_transform(OLD)
    assert function is json_enrich.transform
    assert MESSAGE in caplog.text
    assert load_transform(NEW) is json_enrich.transform
