"""The devstack's Kafka versions: what it accepts, and the matrix (`make compat`) naming tests that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.devstack.jars import KAFKA_VERSION, KAFKA_VERSIONS, check_kafka_version
from tools.compat import CAPABILITIES

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("version", ["3.9.0", "3.9.2", "4.1.1", "4.4.0", "5.0.0"])
def test_versions_from_3_9_are_accepted(version: str) -> None:
    assert check_kafka_version(version) == version


@pytest.mark.parametrize("version", ["3.8.1", "2.8.0", "4.1", "latest", "4.1.1-rc1", ""])
def test_older_or_malformed_versions_are_refused_naming_the_tested_ones(version: str) -> None:
    with pytest.raises(DevstackError) as refused:
        check_kafka_version(version)
    assert repr(version) in refused.value.message and "3.9.2, 4.1.1, 4.4.0" in refused.value.fix


def test_the_default_is_tested_and_ci_runs_the_oldest() -> None:
    assert KAFKA_VERSION in KAFKA_VERSIONS and list(KAFKA_VERSIONS) == sorted(KAFKA_VERSIONS)
    oldest = re.search(r"^OLDEST_KAFKA \?= (\S+)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert oldest is not None and oldest[1] == KAFKA_VERSIONS[0]


def _compat_tests(path: Path) -> set[str]:
    """The test functions of ``path`` marked ``compat`` (directly or through a parameter's marks)."""
    source = path.read_text()
    marked = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            decorators = " ".join(ast.get_source_segment(source, d) or "" for d in node.decorator_list)
            if "compat" in decorators or "COMPAT" in decorators or "_marks" in decorators:
                marked.add(node.name)
    return marked


def test_every_capability_of_the_matrix_names_compat_tests_that_exist() -> None:
    for capability, nodeids in CAPABILITIES.items():
        for nodeid in nodeids:
            file, _, name = nodeid.partition("::")
            assert name in _compat_tests(REPO / file), f"{capability}: {nodeid} is not a compat test"
