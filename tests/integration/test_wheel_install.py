"""The README's ``pip install`` path, as a new user takes it: the wheel alone, in a fresh venv.

Builds the wheel from a copy of the source tree, installs it with the ``spark`` extra (what a
worker running the pipelines' submit tasks needs; without it they parse as stand-ins) into a new
venv through this Python's constraints file, and from a folder that is not the checkout, with
nothing of the source tree on ``sys.path``: Airflow lists the provider and its ``[eos]`` options, the
DAGs the wheel ships parse, and ``eos preflight`` checks a spec against the session's broker.

The installer is uv where the test's own environment has it (``make install`` puts it there): the
same wheel, extras and constraints resolve to the same distributions, in 15 s instead of pip's 85.
``EOS_WHEEL_TEST_INSTALLER=pip`` takes pip's path, as the README's quick start does.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

import pytest

from tests.integration.test_recovery_cli import group_coordinator_ready  # noqa: F401  (autouse warm-up)

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PYVER = f"{sys.version_info.major}.{sys.version_info.minor}"
CONSTRAINTS = REPO / f"constraints-{PYVER}.txt"
# What a checkout holds that a build never reads (venvs, caches, results).
_NOT_SOURCE = (".git", ".cache", "build", "dist", "artifacts", ".pytest_cache", ".ruff_cache", "__pycache__")
#: The DAG files the wheel ships, and the DAGs they give on its example spec (pipelines/orders_enrich.yaml).
SHIPPED_DAG_FILES = {"eos_pipeline", "eos_health_check", "eos_manual_recovery", "eos_spec_errors"}
SHIPPED_DAGS = {"eos_pipeline__orders_enrich", "eos_health_check", "eos_manual_recovery"}


def _ignored(folder: str, names: list[str]) -> set[str]:
    if Path(folder).name == "target" and Path(folder).parent.name == "jvm":
        return {name for name in names if name != "eos-executor-writer.jar"}  # the built jar only
    return {name for name in names
            if name in _NOT_SOURCE or name.startswith(".venv") or name.endswith((".egg-info", ".pyc"))}


def _run(command: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    print(f"{time.monotonic() - started:6.1f} s  {' '.join(command[:4])}")  # the README path's cost, with -s
    assert result.returncode == 0, f"{command} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result


def _clean_env(home: Path) -> dict[str, str]:
    # No PYTHONPATH, no EOS_* or AIRFLOW__* of the suite's: only what a user's shell would have.
    # The installers' own settings (index, cache, certificates, proxies) are the user's too.
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "JAVA_HOME", "TMPDIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
    installers = ("PIP_", "UV_", "SSL_CERT_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
    env = {key: value for key, value in os.environ.items()
           if key in keep or key.upper().startswith(installers)}
    env.update({"AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the checkout (the checkout itself gains no build/ folder)."""
    source = tmp_path_factory.mktemp("source") / "airflow-provider-eos"
    shutil.copytree(REPO, source, ignore=_ignored)  # copy2 keeps mtimes: the jar stays newer than jvm/'s sources
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), "."],
         cwd=source, env=_clean_env(out), timeout=1200)
    (built,) = out.glob("airflow_provider_eos-*.whl")
    return built


def test_the_wheel_carries_what_a_user_needs(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"airflow_provider_eos/py.typed", "airflow_provider_eos/jars/eos-executor-writer.jar",
            "airflow_provider_eos/devstack/maven/settings.xml",
            "airflow_provider_eos/example_dags/pipelines/orders_enrich.yaml"} <= names
    assert {f"airflow_provider_eos/example_dags/{dag}.py" for dag in SHIPPED_DAG_FILES} <= names
    # The DAG factories the example DAGs call, and the Spark side's shell beside the product package.
    assert {f"airflow_provider_eos/dags/{factory}.py" for factory in ("pipeline", "health_check", "manual_recovery",
                                                                      "spec_errors")} <= names
    assert {"spark_jobs/__init__.py", "spark_jobs/eos_job.py", "spark_jobs/transforms/json_enrich.py",
            "spark_jobs/transforms/fraud_alerts.py"} <= names
    assert any(name.endswith(".dist-info/licenses/LICENSE") or name.endswith(".dist-info/LICENSE") for name in names)
    assert not [name for name in names if "__pycache__" in name or name.startswith(("tests/", "dags/", "jvm/"))]
    # The JVM writer announces its points; the crash tests' observer of them stays in the test jar.
    with zipfile.ZipFile(zipfile.Path(wheel, "airflow_provider_eos/jars/eos-executor-writer.jar").open("rb")) as jar:
        classes = [name for name in jar.namelist() if name.endswith(".class")]
    assert any(name.endswith("/TaskObserver.class") for name in classes), classes
    assert not [name for name in classes if "Fault" in name], classes


def _installer(python: Path) -> list[str]:
    """``pip install`` into the new venv, through uv when it is here and pip was not asked for."""
    if os.environ.get("EOS_WHEEL_TEST_INSTALLER", "uv") == "uv" and importlib.util.find_spec("uv"):
        return [sys.executable, "-m", "uv", "pip", "install", "--python", str(python)]
    return [str(python), "-m", "pip", "install"]


def test_pip_install_registers_the_provider_parses_the_dags_and_runs_preflight(
    wheel: Path, tmp_path: Path, bootstrap: str, topic_factory
):
    assert CONSTRAINTS.is_file(), f"no constraints file for Python {PYVER}: {CONSTRAINTS.name}"
    user = tmp_path / "user"  # the working folder: not the checkout
    user.mkdir()
    env = _clean_env(tmp_path / "airflow-home")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=user, env=env, timeout=300)
    bin_dir = venv / "bin"
    _run([*_installer(bin_dir / "python"), "-q", "--constraint", str(CONSTRAINTS), f"{wheel}[spark]"],
         cwd=user, env=env, timeout=900)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"

    where = _run([str(bin_dir / "python"), "-c",
                  "import airflow_provider_eos, sys; print(airflow_provider_eos.__file__); print(sys.path)"],
                 cwd=user, env=env, timeout=60).stdout
    assert str(venv) in where.splitlines()[0] and str(REPO) not in where, where
    version = _run([str(bin_dir / "eos"), "--version"], cwd=user, env=env, timeout=60).stdout
    assert version.startswith("eos ") and PYVER in version

    providers = _run([str(bin_dir / "airflow"), "providers", "list", "--output", "json"], cwd=user, env=env,
                     timeout=300)
    assert "airflow-provider-eos" in {p["package_name"] for p in json.loads(providers.stdout)}, providers.stdout
    option = _run([str(bin_dir / "airflow"), "config", "get-value", "eos", "spark_conn_id"], cwd=user, env=env,
                  timeout=300)
    assert option.stdout.strip() == "spark_default", option.stdout + option.stderr

    parse = _run([str(bin_dir / "python"), "-c", _PARSE_SHIPPED_DAGS], cwd=user, env=env, timeout=300)
    parsed = json.loads(parse.stdout.splitlines()[-1])
    assert parsed["errors"] == {} and set(parsed["dags"]) == SHIPPED_DAGS, parsed

    name = f"wheel{uuid.uuid4().hex[:8]}"
    spec = user / "specs" / f"{name}.json"
    spec.parent.mkdir()
    spec.write_text(json.dumps({
        "name": name, "kafka": {"bootstrap.servers": bootstrap},
        "input_topics": [topic_factory("wheel-in", partitions=2)], "output_topic": topic_factory("wheel-out", 2),
        "group_id": f"{name}-sink", "transactional_id_prefix": f"{name}-eos",
        "checkpoint_location": str(user / "checkpoints" / name), "trigger": "10 seconds",
        "batch_budget_ms": 20_000, "transaction_timeout_ms": 60_000, "max_offsets_per_trigger": 1000,
    }))
    preflight = _run([str(bin_dir / "eos"), "preflight", "--spec", str(spec), "--json", "--specs-dir",
                      str(spec.parent), "--master", "local[2]"], cwd=user, env=env, timeout=300)
    report = json.loads(preflight.stdout)
    assert preflight.returncode == 0 and report["ok"] is True and report["pipeline"] == name, preflight.stdout


# Parses the wheel's example_dags as the DAG processor would, and prints what it found as JSON.
_PARSE_SHIPPED_DAGS = """
import json, pathlib, airflow_provider_eos
try:
    from airflow.dag_processing.dagbag import DagBag
except ModuleNotFoundError:  # Airflow 3.1
    from airflow.models.dagbag import DagBag
folder = pathlib.Path(airflow_provider_eos.__file__).parent / "example_dags"
bag = DagBag(dag_folder=str(folder))
print(json.dumps({"dags": sorted(bag.dag_ids), "errors": {k: str(v)[-2000:] for k, v in bag.import_errors.items()}}))
"""
