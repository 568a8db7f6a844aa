"""Every third-party module the distribution imports is declared in setup.cfg (install_requires or an extra).

Airflow pulls in psutil, cryptography, packaging ... today; a module the package imports only
because a dependency happens to bring it breaks the day that dependency drops it. The scan reads
the package and the DAGs the wheel ships (``dags/`` as ``example_dags``) with ``ast``, imports in
functions included, and maps each top-level module to the distributions that provide it here.
"""

from __future__ import annotations

import ast
import configparser
import functools
import importlib.metadata
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHIPPED = (REPO / "airflow_provider_eos", REPO / "dags")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    lines = cfg["options"]["install_requires"].splitlines()
    for value in cfg["options.extras_require"].values():
        lines += value.splitlines()
    return {_normalized(re.split(r"[<>=!~ \[;]", line.strip(), maxsplit=1)[0])
            for line in lines if line.strip() and not line.strip().startswith("#")}


def _imports() -> dict[str, set[str]]:
    """``{dotted module: files importing it}`` for absolute imports outside the standard library and the package."""
    found: dict[str, set[str]] = {}
    for root in SHIPPED:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top != "airflow_provider_eos":
                        found.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return found


@functools.cache
def _top_level_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()  # a walk of every installed distribution: once


def _providers(module: str) -> set[str]:
    """The distributions that can provide ``module`` (Airflow's providers share the ``airflow`` namespace)."""
    parts = module.split(".")
    if parts[:2] == ["airflow", "providers"] and len(parts) > 2:
        # airflow.providers.apache.kafka.hooks -> apache-airflow-providers-apache-kafka (or -apache)
        return {f"apache-airflow-providers-{'-'.join(parts[2:n])}" for n in range(3, len(parts) + 1)}
    return {_normalized(d) for d in _top_level_distributions().get(parts[0], [])}


def test_every_third_party_import_is_declared():
    declared = _declared()
    undeclared = {
        module: sorted(files) for module, files in _imports().items()
        if not _providers(module) & declared
    }
    assert not undeclared, (
        "imported but not declared in setup.cfg (install_requires or an extra), or not installed here: "
        f"{undeclared}"
    )


def test_the_scan_sees_what_airflow_only_brings_in():
    # The check is only as good as its scan: these came in through Airflow before they were declared.
    modules = {module.split(".")[0] for module in _imports()}
    assert {"psutil", "cryptography", "packaging", "fsspec", "confluent_kafka", "pyspark"} <= modules
    assert _providers("airflow.providers.apache.kafka.hooks.base") >= {"apache-airflow-providers-apache-kafka"}
    assert "pyyaml" in _providers("yaml")


def test_object_store_extras_bring_fsspec_filesystems():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    extras = cfg["options.extras_require"]
    assert {"s3fs", "gcsfs", "adlfs"} == {
        _normalized(re.split(r"[<>=!~ ]", extras[name].strip(), maxsplit=1)[0]) for name in ("s3", "gcs", "azure")
    }
