"""The package installs as an Airflow provider and with the full PySpark distribution."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _pinned(name: str) -> str:
    match = re.search(rf"^\s*{re.escape(name)}==([\w.]+)\s*$", (REPO / "setup.cfg").read_text(), re.M)
    assert match, f"{name} is not pinned in setup.cfg"
    return match.group(1)


def test_package_root_imports_neither_airflow_nor_pyspark():
    code = (
        "import sys, airflow_provider_eos, airflow_provider_eos.core.errors;"
        "bad=[m for m in ('airflow','pyspark') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.spark
def test_installed_pyspark_is_the_full_distribution_at_the_pinned_version(spark):
    import pyspark

    assert pyspark.__version__ == _pinned("pyspark") == importlib.metadata.version("pyspark")
    assert (Path(pyspark.__file__).parent / "jars").is_dir()
    assert spark.range(10).count() == 10
    assert spark.version == pyspark.__version__


def test_connector_jars_match_the_installed_spark(connector_jars):
    names = [j.name for j in connector_jars]
    version = importlib.metadata.version("pyspark")
    assert f"spark-sql-kafka-0-10_2.13-{version}.jar" in names, names
    assert not any(n.startswith(("scala-library", "hadoop-client")) for n in names), names


@pytest.mark.airflow
def test_airflow_lists_the_provider(airflow_home):
    airflow = Path(sys.executable).with_name("airflow")
    result = subprocess.run(
        [str(airflow), "providers", "list", "--output", "json"], capture_output=True, text=True, check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "airflow-provider-eos" in result.stdout
