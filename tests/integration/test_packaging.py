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
    match = re.search(rf"^{re.escape(name)}==([\w.]+)\s*$", (REPO / "constraints-3.11.txt").read_text(), re.M)
    assert match, f"{name} is not pinned in constraints-3.11.txt"
    return match.group(1)


def _requirements(section: str) -> list[str]:
    """The requirement lines of ``install_requires`` or of one extra in setup.cfg."""
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    options = cfg["options"] if section == "install_requires" else cfg["options.extras_require"]
    value = options[section]
    return [line.strip() for line in value.splitlines() if line.strip()]


def test_requirements_are_ranges_and_spark_is_an_extra():
    base = _requirements("install_requires")
    assert not [r for r in base if "==" in r], "install_requires must declare ranges, not exact pins"
    names = {re.split(r"[<>=!~ \[]", r, maxsplit=1)[0].lower() for r in base}
    assert not names & {"pyspark", "pyspark-client", "pyarrow", "pandas", "apache-airflow-providers-apache-spark"}, (
        "an Airflow worker that only runs pre-flight, health and recovery must install no Spark"
    )
    spark = {re.split(r"[<>=!~ \[]", r, maxsplit=1)[0].lower() for r in _requirements("spark")}
    assert {"pyspark", "pyarrow", "pandas"} <= spark


def test_every_supported_python_has_its_constraints_file():
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    classified = set(re.findall(r"Programming Language :: Python :: (3\.\d+)$", cfg["metadata"]["classifiers"], re.M))
    assert classified == {"3.11", "3.12", "3.13"}
    assert cfg["options"]["python_requires"] == ">=3.11,<3.14"
    assert {p.name for p in REPO.glob("constraints-3.*.txt")} == {f"constraints-{v}.txt" for v in classified}


@pytest.mark.parametrize("constraints", ["constraints-3.11.txt", "constraints-3.12.txt", "constraints-3.13.txt"])
def test_constraints_pin_every_requirement_in_range(constraints: str):
    from packaging.requirements import Requirement

    pins = dict(
        line.split("==", 1) for line in (REPO / constraints).read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    pins = {name.lower().replace("_", "-"): version for name, version in pins.items()}
    for line in _requirements("install_requires") + _requirements("spark") + _requirements("dev") + _requirements(
            "bench"):
        requirement = Requirement(line)
        name = requirement.name.lower().replace("_", "-")
        assert name in pins, f"{name} has no tested version in {constraints} (run `make constraints`)"
        assert requirement.specifier.contains(pins[name]), f"{name}=={pins[name]} is outside {requirement.specifier}"


@pytest.mark.smoke
def test_package_root_imports_neither_airflow_nor_pyspark():
    code = (
        "import sys, airflow_provider_eos, airflow_provider_eos.core.errors;"
        "bad=[m for m in ('airflow','pyspark') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.spark
@pytest.mark.smoke
def test_installed_pyspark_is_the_full_distribution_at_the_pinned_version(spark):
    import pyspark

    assert pyspark.__version__ == _pinned("pyspark") == importlib.metadata.version("pyspark")
    assert (Path(pyspark.__file__).parent / "jars").is_dir()
    assert spark.range(10).count() == 10
    assert spark.version == pyspark.__version__


@pytest.mark.smoke
def test_connector_jars_match_the_installed_spark(connector_jars):
    names = [j.name for j in connector_jars]
    version = importlib.metadata.version("pyspark")
    assert f"spark-sql-kafka-0-10_2.13-{version}.jar" in names, names
    assert not any(n.startswith(("scala-library", "hadoop-client")) for n in names), names


@pytest.mark.airflow
@pytest.mark.smoke
def test_airflow_lists_the_provider(airflow_home):
    airflow = Path(sys.executable).with_name("airflow")
    result = subprocess.run(
        [str(airflow), "providers", "list", "--output", "json"], capture_output=True, text=True, check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "airflow-provider-eos" in result.stdout


def test_a_worker_without_the_spark_extra_runs_preflight_health_and_recovery():
    """With pyspark, pyarrow, pandas and the Spark provider unimportable, everything but submit loads, and every
    DAG parses: the pipelines' submit tasks are stand-ins that fail naming the spark extra.

    (A venv installed without extras was checked by hand too; Airflow's own provider discovery
    reads installed distributions and imports each one's provider info, so the hook hides the Spark
    provider's operators and hooks, not its package.)
    """
    code = """
import importlib.abc, importlib.util, sys
BLOCKED = ("pyspark", "pyarrow", "pandas", "airflow.providers.apache.spark.operators",
           "airflow.providers.apache.spark.hooks")
class NoSpark(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.startswith(BLOCKED):
            raise ModuleNotFoundError(f"No module named {name!r} (no [spark] extra)", name=name)
sys.meta_path.insert(0, NoSpark())
import airflow_provider_eos.operators.recovery, airflow_provider_eos.operators.preflight
import airflow_provider_eos.operators.driver, airflow_provider_eos.sensors.health
import airflow_provider_eos.triggers.health, airflow_provider_eos.cli.main
dags = {}
for dag in ("eos_health_check", "eos_manual_recovery", "eos_pipeline", "eos_spec_errors"):
    spec = importlib.util.spec_from_file_location(dag, f"dags/{dag}.py")
    dags[dag] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dags[dag])
assert "airflow.providers.apache.spark.operators.spark_submit" not in sys.modules
pipeline = dags["eos_pipeline"].eos_pipeline__orders_enrich  # the example spec's DAG
kinds = {task.task_id: type(task).__name__ for task in pipeline.tasks}
assert kinds["submit"] == kinds["submit_stream"] == "SparkExtraMissingOperator", kinds
assert kinds["preflight"] == "EosPreflightOperator", kinds
try:
    pipeline.get_task("submit").execute({})
except Exception as exc:
    print(type(exc).__name__, exc)
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False,
                            timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stdout + result.stderr
    # The error and its fix, over several lines, after the DAG's parse-time warning that the extra is missing.
    output = result.stdout.strip().removesuffix("ok")
    assert "The spark extra is not installed" in output.split("AirflowFailException")[0], output
    failure = output[output.index("AirflowFailException"):].strip()
    assert failure.startswith("AirflowFailException task submit submits the Spark job"), failure
    assert "'airflow.providers.apache.spark" in failure and "pip install 'airflow-provider-eos[spark]'" in failure
