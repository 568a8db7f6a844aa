"""A Spark master spelled one way (core.spark_master): what `eos airflow up` records and compares, `eos run` runs on."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.errors import SubmissionError
from airflow_provider_eos.core.preflight.locations import is_local_master
from airflow_provider_eos.core.spark_master import canonical_master, checked_master


@pytest.mark.parametrize(("spelled", "canonical"), [
    ("spark://127.0.0.1:7077", "spark://127.0.0.1:7077"),
    ("spark://127.0.0.1:7077/", "spark://127.0.0.1:7077"),
    ("  spark://127.0.0.1:7077//\n", "spark://127.0.0.1:7077"),
    ("SPARK://127.0.0.1:7077", "spark://127.0.0.1:7077"),
    ("Spark://Master.Example.COM:7077", "spark://master.example.com:7077"),
    ("spark://h1:7077, H2:7077/", "spark://h1:7077,h2:7077"),
    ("local[2]", "local[2]"),
    (" local[2]\t", "local[2]"),
    ("LOCAL[*]", "local[*]"),
    ("local-cluster[2,1,1024]", "local-cluster[2,1,1024]"),
    ("YARN ", "yarn"),
    ("K8S://https://Api.Example:6443/", "k8s://https://Api.Example:6443"),
])
def test_one_master_has_one_spelling(spelled: str, canonical: str) -> None:
    assert canonical_master(spelled) == canonical
    assert canonical_master(canonical) == canonical  # spelled once, it stays


@pytest.mark.parametrize(("one", "other"), [
    ("spark://localhost:7077", "spark://127.0.0.1:7077"),  # a name, not an address: it may resolve to ::1
    ("spark://127.0.0.1:7077", "spark://127.0.0.1:7078"),
    ("local[2]", "local[4]"),
    ("local[2]", "spark://127.0.0.1:7077"),
])
def test_different_masters_stay_different(one: str, other: str) -> None:
    assert canonical_master(one) != canonical_master(other)


def test_a_blank_master_is_empty() -> None:
    assert canonical_master("  \t") == ""


def test_a_local_master_is_told_in_any_spelling() -> None:
    assert is_local_master(" LOCAL[2]") and is_local_master("local-cluster[2,1,1024]")
    assert not is_local_master("spark://127.0.0.1:7077") and not is_local_master("yarn")


def test_a_command_runs_with_the_one_spelling_and_a_blank_master_is_refused_naming_the_option() -> None:
    assert checked_master(" SPARK://127.0.0.1:7077/", option="--master", error=SubmissionError) == \
        "spark://127.0.0.1:7077"
    with pytest.raises(SubmissionError) as refused:
        checked_master(" ", option="--master", error=SubmissionError)
    assert refused.value.message == "--master ' ' is empty."
    assert refused.value.fix is not None and "local[2]" in refused.value.fix
