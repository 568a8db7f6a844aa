"""The packed job environment's recipe (what goes in, when an archive is reused) and the job's spec lookup.

The real build (venv + pip + venv-pack) runs in tests/integration/test_cluster_environment.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

from airflow_provider_eos.core.errors import JobEnvironmentError
from airflow_provider_eos.spark import job_environment
from airflow_provider_eos.spark.entry_point import local_spec_file
from airflow_provider_eos.spark.job_environment import EnvironmentRecipe, build_job_environment, job_requirements


def names(requirements: list[str]) -> set[str]:
    from packaging.requirements import Requirement

    return {Requirement(r).name.lower() for r in requirements}


def test_the_job_needs_the_kafka_client_and_arrow_but_neither_airflow_nor_pyspark():
    required = names(job_requirements())
    assert {"confluent-kafka", "pyarrow", "pandas", "pydantic", "pyyaml"} <= required
    assert not {n for n in required if n.startswith("apache-airflow") or n.startswith("pyspark")}, required
    # setup.cfg's ranges travel, and the constraints file pins them.
    assert any(r.startswith("confluent-kafka") and "<3" in r for r in job_requirements())


def test_the_recipe_pins_the_source_trees_constraints():
    recipe = EnvironmentRecipe.current()
    repo = Path(__file__).resolve().parents[2]
    this_python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert recipe.constraints == (repo / f"constraints-{this_python}.txt").read_text()
    assert recipe.requirements == tuple(job_requirements())


def test_the_fingerprint_changes_with_every_input_and_only_then():
    recipe = EnvironmentRecipe(python="/usr/bin/python3.11", python_version="3.11.7", machine="Linux-x86_64",
                               requirements=("confluent-kafka<3,>=2.6",), constraints="confluent-kafka==2.16.1\n",
                               package_digest="abc")
    assert recipe.fingerprint() == dataclasses.replace(recipe).fingerprint()
    for change in ({"constraints": "confluent-kafka==2.16.2\n"}, {"package_digest": "abd"},
                   {"requirements": ("confluent-kafka<3,>=2.6", "my-transforms==1.0")}, {"python_prefix": "/usr"},
                   {"python_version": "3.11.8"}):
        assert dataclasses.replace(recipe, **change).fingerprint() != recipe.fingerprint(), change


def test_an_archive_built_from_the_same_recipe_is_reused_without_building(tmp_path, monkeypatch):
    recipe = EnvironmentRecipe(python="/usr/bin/python3.11", python_version="3.11.7", machine="Linux-x86_64",
                               requirements=(), constraints="", package_digest="abc")
    out = tmp_path / "eos-job-env.tar.gz"
    out.write_bytes(b"archive")
    (tmp_path / "eos-job-env.tar.gz.eos.json").write_text(json.dumps({"fingerprint": recipe.fingerprint()}))

    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"rebuilt: {args}")

    monkeypatch.setattr(job_environment, "run_bounded", no_build)
    built = build_job_environment(out, recipe)
    assert built.reused and built.archive == out and out.read_bytes() == b"archive"
    # Another recipe (or --force) builds: here the first build step is reached.
    with pytest.raises(AssertionError, match="rebuilt"):
        build_job_environment(out, dataclasses.replace(recipe, package_digest="abd"))
    with pytest.raises(AssertionError, match="rebuilt"):
        build_job_environment(out, recipe, force=True)


def test_the_archive_must_be_a_tar_gz(tmp_path):
    with pytest.raises(JobEnvironmentError) as caught:
        build_job_environment(tmp_path / "env.zip")
    assert "does not end with .tar.gz" in str(caught.value)


def test_an_interpreter_of_another_minor_version_than_the_driver_is_refused(tmp_path):
    other = f"3.{sys.version_info.minor + 1}.1"  # never the running Python's minor (the suite runs on 3.11-3.13)
    fake = tmp_path / "python3-other"
    fake.write_text(f"#!/bin/sh\necho {other}\n")
    fake.chmod(0o755)
    with pytest.raises(JobEnvironmentError) as caught:
        EnvironmentRecipe.current(python=str(fake))
    assert f"Python {other}" in str(caught.value) and "--python" in caught.value.fix


def test_the_job_opens_a_path_as_given_and_a_bare_name_in_its_working_folder(tmp_path, monkeypatch):
    absolute = tmp_path / "missing.yaml"
    assert local_spec_file(str(absolute)) == absolute  # loading it names the missing file
    monkeypatch.chdir(tmp_path)
    assert local_spec_file("spec.yaml") is None  # not here: shipped, ask SparkFiles once Spark runs
    (tmp_path / "spec.yaml").write_text("name: x\n")
    assert local_spec_file("spec.yaml") == Path("spec.yaml")
    assert Path(os.getcwd(), local_spec_file("spec.yaml")).is_file()
