"""``make compat-airflow`` (``python -m tools.compat_airflow``): the Airflow-version matrix, in docs/compatibility.md.

For the lowest Airflow ``setup.cfg`` claims and the newest (:data:`AIRFLOWS`), each with the provider
versions that go with it, this builds a virtualenv outside the repository through that version's
constraints file (``constraints-airflow-X.Y.Z.txt``), runs the Airflow subset of the suite in it
(:data:`CAPABILITIES`) and writes one row per capability and one column per Airflow: pass, fail or skip,
with the seconds it took. Results are kept per Airflow in ``.cache/compat-airflow/`` so a run of some
capabilities (``--only``) updates the table without rerunning the rest. It stays out of CI.

``python -m tools.compat_airflow lock`` writes the constraints files anew: first the packages Airflow's
own release resolved to (everything uploaded before the day after its release, as Airflow's constraints
file of that release would pin), then the package's own requirements and the providers' pins on top,
preferring those versions and, for what Airflow does not bring, the tested ``constraints-3.11.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tools.compat import Outcome, outcomes_of, replace_section

REPO = Path(__file__).resolve().parents[1]
TABLE = REPO / "docs" / "compatibility.md"
RESULTS = REPO / ".cache" / "compat-airflow"
TESTED = REPO / "constraints-3.11.txt"
EXCLUDES = REPO / "tools" / "install-excludes.txt"
WHEELHOUSE = Path(os.environ.get("WHEELHOUSE", Path.home() / ".cache" / "airflow-provider-eos" / "wheels"))
VENVS = Path(os.environ.get("EOS_COMPAT_VENVS", Path.home() / ".cache" / "airflow-provider-eos" / "venvs"))
EXTRAS = "spark,celery,dev,docs,bench"
#: What is not Airflow's to vary: the Spark the jars are resolved for stays the tested one.
KEPT_PINS = ("pyspark",)


@dataclass(frozen=True)
class AirflowSet:
    """One tested Airflow and the provider versions installed with it."""

    airflow: str
    #: the day after Airflow's release: what Airflow's own constraints of that release could pin
    released: str
    providers: dict[str, str] = field(default_factory=dict)
    why: str = ""

    @property
    def constraints(self) -> Path:
        return REPO / f"constraints-airflow-{self.airflow}.txt"

    def pins(self) -> list[str]:
        return [f"apache-airflow=={self.airflow}"] + [
            f"apache-airflow-providers-{name}=={version}" for name, version in self.providers.items()]

    def heading(self) -> str:
        providers = ", ".join(f"{name} {version}" for name, version in self.providers.items())
        return f"Airflow {self.airflow}, {self.why} (providers: {providers})"


#: The lowest Airflow and provider versions setup.cfg's ranges claim, and the newest of each on PyPI.
#: common-compat's floor is its newest release too: the Spark provider's OpenLineage helpers need it.
AIRFLOWS: tuple[AirflowSet, ...] = (
    AirflowSet("3.1.0", "2025-09-26", {"apache-kafka": "1.10.0", "apache-spark": "6.2.0",
                                       "common-compat": "1.23.0", "standard": "1.0.0", "celery": "3.8.3"},
               "the lowest claimed"),
    AirflowSet("3.3.2", "2026-09-18", {"apache-kafka": "2.1.0", "apache-spark": "6.3.4",
                                       "common-compat": "1.23.0", "standard": "1.21.0", "celery": "3.26.0"},
               "the newest"),
)


@dataclass(frozen=True)
class Capability:
    """One row: the pytest selection that proves it, and whether it starts Kafka, Spark or Airflow."""

    name: str
    args: tuple[str, ...]
    heavy: bool = True
    #: its ``long``-marked tests run too (``make test`` leaves them out): the row's proof is one of them.
    long: bool = False


CAPABILITIES: tuple[Capability, ...] = (
    Capability("the provider registered: entry point, get_provider_info, ProvidersManager, the [eos] section",
               ("tests/unit/test_provider_registration.py", "tests/unit/test_eos_configuration.py"), heavy=False),
    Capability("unit tests (tests/unit: hooks, operators, sensor, trigger, DAG factories; no services)",
               ("tests/unit",), heavy=False),
    Capability("the DAGs parse (DagBag), each role with its own Kafka connection",
               ("tests/dags/test_dags.py",)),
    Capability("pre-flight operator (dag.test, real broker)", ("tests/dags/test_preflight_operator.py",)),
    Capability("recovery operators: abort, align, rewind, verify (dag.test, real broker)",
               ("tests/dags/test_recovery_operators.py",)),
    Capability("health sensor, deferred to its trigger (dag.test, Spark)", ("tests/dags/test_health_sensor.py",)),
    Capability("the pipeline DAG's recovery gate (dag.test, Spark)",
               ("tests/dags/test_pipeline_recovery_gate.py",)),
    Capability("the manual recovery DAG: forms, refusals, verdicts (dag.test)",
               ("tests/dags/test_manual_recovery_ui.py",)),
    Capability("a secured pipeline, three principals: crash, recover, resume (dag.test, Spark)",
               ("tests/dags/test_secured_pipeline.py",)),
    Capability("a deployment (`eos airflow up`, SQLite): the recovery DAG through the UI and REST",
               ("tests/deployment/test_recovery_ui.py",)),
    Capability("a deployment: the \"Exactly-once pipelines\" view (plugin: FastAPI app, Browse menu), its "
               "recovery form, Airflow's auth", ("tests/deployment/test_pipelines_view.py",)),
    # The one test of a real deployment end to end: the triggerer, the scheduler's handling of a task
    # cleared or marked failed while it runs, one DAG per pipeline; what changes between Airflow versions.
    Capability("a deployment end to end: a stream watched from the triggerer, another pipeline's DAG running "
               "beside it, the driver SIGKILLed, cleared and marked failed, exactly once (long)",
               ("tests/deployment/test_streaming_pipeline.py",), long=True),
)


def _uv(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "uv", *args], cwd=REPO, check=True)


def _names(lines: list[str]) -> dict[str, str]:
    pins = {}
    for line in lines:
        match = re.match(r"^([A-Za-z0-9_.\-]+)==", line)
        if match:
            pins[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = line.strip()
    return pins


def lock(airflow: AirflowSet) -> None:
    """Write ``airflow.constraints``: Airflow's world as released, the package's requirements on top."""
    tested = _names(TESTED.read_text().splitlines())
    with tempfile.TemporaryDirectory(prefix="eos-lock-") as folder:
        era, wanted, out = (Path(folder) / name for name in ("era.txt", "wanted.in", "out.txt"))
        (Path(folder) / "airflow.in").write_text(f"apache-airflow=={airflow.airflow}\n")
        _uv("pip", "compile", "-q", "--python-version", "3.11", str(Path(folder) / "airflow.in"),
            "--exclude-newer", f"{airflow.released}T00:00:00Z", "--no-annotate", "--no-header", "-o", str(era))
        released = _names(era.read_text().splitlines())
        # uv prefers the versions an existing output file names: Airflow's first, then the tested ones.
        out.write_text("\n".join([*released.values(), *(v for k, v in tested.items() if k not in released)]) + "\n")
        wanted.write_text("\n".join([*airflow.pins(), *(tested[name] for name in KEPT_PINS)]) + "\n")
        _uv("pip", "compile", "-q", "--python-version", "3.11", "pyproject.toml",
            *(f"--extra={extra}" for extra in EXTRAS.split(",")), str(wanted),
            "--excludes", str(EXCLUDES), "--find-links", str(WHEELHOUSE),
            "--no-annotate", "--no-header", "-o", str(out))
        header = [f"# Airflow {airflow.airflow} ({airflow.why}) with the provider versions that go with it, on",
                  "# Python 3.11: `make compat-airflow` installs through this file into its own virtualenv.",
                  "# Written by `python -m tools.compat_airflow lock` (what Airflow's release resolved to,",
                  "# then this package's requirements on top); the tested set stays constraints-3.11.txt."]
        airflow.constraints.write_text("\n".join(header) + "\n" + out.read_text())


def venv(airflow: AirflowSet) -> tuple[Path, float | None]:
    """The virtualenv of ``airflow`` (built or brought up to its constraints file): its python, and the
    seconds a fresh one took to build (None when it existed)."""
    folder = VENVS / f"airflow-{airflow.airflow}"
    python = folder / "bin" / "python"
    start = time.monotonic()
    fresh = not python.exists()
    if fresh:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    _uv("pip", "install", "--python", str(python), "-q", "-e", f".[{EXTRAS}]", "-c", str(airflow.constraints),
        "--excludes", str(EXCLUDES), "--find-links", str(WHEELHOUSE))
    return python, (time.monotonic() - start if fresh else None)


def pytest_command(python: Path, capability: Capability, workers: str, junit: Path) -> list[str]:
    """The pytest command of a capability: its files, without the ``long`` tests (as ``make test``) unless
    the capability is one (a later ``-m`` replaces setup.cfg's ``-m "not long"``)."""
    marks = ("-m", "long or not long") if capability.long else ()
    return [str(python), "-m", "pytest", "-q", "-n", workers if capability.heavy else "2",
            f"--junitxml={junit}", "-p", "no:cacheprovider", *marks, *capability.args]


def run(python: Path, capability: Capability, workers: str) -> list[Outcome]:
    """The capability's tests in the Airflow's virtualenv (:func:`pytest_command`)."""
    with tempfile.TemporaryDirectory(prefix="eos-compat-airflow-") as folder:
        junit = Path(folder) / "junit.xml"
        subprocess.run(pytest_command(python, capability, workers, junit), cwd=REPO, check=False)
        return outcomes_of(junit) if junit.exists() else []


def _results_file(airflow: AirflowSet) -> Path:
    return RESULTS / f"{airflow.airflow}.json"


def _load(airflow: AirflowSet) -> dict[str, dict]:
    """The kept results of ``airflow``; without any (a fresh checkout: ``.cache`` is not in git), the
    table's, so a run of some capabilities keeps the other rows as docs/compatibility.md has them."""
    path = _results_file(airflow)
    if path.exists():
        return json.loads(path.read_text())
    return from_table(TABLE.read_text(), airflow) if TABLE.exists() else {}


_CELL = re.compile(r"^(pass|fail|skip) \((\d+) s(?:, (\d+) tests)?\)$")


def from_table(page: str, airflow: AirflowSet) -> dict[str, dict]:
    """The results :func:`table` wrote into ``page`` for ``airflow`` (its column), by capability name
    (``install`` for the install's row); "not run" and unknown cells are left out."""
    body = page.split("<!-- compat:airflow -->", 1)[-1].split("<!-- /compat:airflow -->", 1)[0]
    rows = [line for line in body.splitlines() if line.startswith("| ")]
    if not rows:
        return {}
    headings = [cell.strip() for cell in rows[0].strip().strip("|").split("|")]
    if airflow.heading() not in headings:
        return {}
    column = headings.index(airflow.heading())
    names = {"install through its constraints file": "install"} | {c.name: c.name for c in CAPABILITIES}
    results = {}
    for row in rows[1:]:
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        match = _CELL.match(cells[column]) if len(cells) > column else None
        if cells[0] in names and match:
            status, seconds, tests = match.groups()
            results[names[cells[0]]] = {"status": status, "seconds": int(seconds), "tests": int(tests or 0),
                                        "failed": []}
    return results


def _record(airflow: AirflowSet, name: str, result: dict) -> None:
    """Keep one capability's result (read afresh: two runs of different parts may overlap)."""
    results = _load(airflow)
    results[name] = result
    RESULTS.mkdir(parents=True, exist_ok=True)
    _results_file(airflow).write_text(json.dumps(results, indent=1) + "\n")


def _summary(outcomes: list[Outcome]) -> dict:
    statuses = {o.status for o in outcomes}
    status = ("not run" if not outcomes else "fail" if "fail" in statuses
              else "pass" if "pass" in statuses else "skip")
    failed = [o.nodeid for o in outcomes if o.status == "fail"]
    return {"status": status, "seconds": round(sum(o.seconds for o in outcomes)), "tests": len(outcomes),
            "failed": failed}


def _cell(result: dict | None) -> str:
    if not result:
        return "not run"
    if result["status"] == "not run":
        return "not run"
    tests = f", {result['tests']} tests" if result["tests"] else ""
    return f"{result['status']} ({result['seconds']} s{tests})"


def table(results: dict[str, dict[str, dict]], day: str) -> str:
    """The Airflow section of docs/compatibility.md: capability x Airflow."""
    lines = [
        "## Airflow versions",
        "",
        f"`make compat-airflow` on {day}: the lowest Airflow `setup.cfg` claims with every provider at its floor,",
        "and the newest with the newest providers, each in its own virtualenv (Python 3.11) through",
        "`constraints-airflow-X.Y.Z.txt`: what that Airflow's release resolved to, then this package on top",
        "(PySpark and what Airflow does not bring as tested). Each row runs the files `tools/compat_airflow.py`",
        "names for it as `make test` does, without the tests marked `long`; only the last row runs its long test",
        "(`tests/deployment/test_streaming_pipeline.py`, ~5 min: the one end-to-end run of a real deployment).",
        "The DAG and deployment tests use the devstack's default broker. Seconds are the tests' own durations",
        "summed; the install's is a fresh virtualenv's (uv's cache warm).",
        "\"not run\": left out of that run. CI runs the whole suite on the newest only (`constraints-3.11.txt`).",
        "",
        "| capability | " + " | ".join(a.heading() for a in AIRFLOWS) + " |",
        "|---|" + "---|" * len(AIRFLOWS),
        "| install through its constraints file | " + " | ".join(
            _cell(results[a.airflow].get("install")) for a in AIRFLOWS) + " |",
    ]
    for capability in CAPABILITIES:
        lines.append(f"| {capability.name} | "
                     + " | ".join(_cell(results[a.airflow].get(capability.name)) for a in AIRFLOWS) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.compat_airflow", description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=("run", "lock"), default="run")
    parser.add_argument("--airflow", nargs="+", default=[a.airflow for a in AIRFLOWS], metavar="X.Y.Z")
    parser.add_argument("--only", nargs="+", metavar="WORD",
                        help="run only the capabilities whose name contains one of these words")
    parser.add_argument("--light", action="store_true", help="only what starts no broker, Spark or Airflow")
    parser.add_argument("--workers", default="2", help="pytest-xdist workers for the heavy tests (default 2)")
    args = parser.parse_args(argv)
    chosen = [a for a in AIRFLOWS if a.airflow in args.airflow]
    if args.command == "lock":
        for airflow in chosen:
            lock(airflow)
            print(f"wrote {airflow.constraints}")
        return 0
    capabilities = [c for c in CAPABILITIES if (not args.only or any(w in c.name for w in args.only))
                    and not (args.light and c.heavy)]
    failed = []
    for airflow in chosen:
        python, seconds = venv(airflow)
        if seconds is not None or "install" not in _load(airflow):
            _record(airflow, "install", {"status": "pass", "seconds": round(seconds or 0), "tests": 0, "failed": []})
        for capability in capabilities:
            result = _summary(run(python, capability, args.workers))
            _record(airflow, capability.name, result)
            if result["status"] == "fail":
                failed.append(f"{airflow.airflow}: {capability.name}: {', '.join(result['failed'])}")
    day = time.strftime("%Y-%m-%d")
    TABLE.write_text(replace_section(TABLE.read_text(), "airflow", table({a.airflow: _load(a) for a in AIRFLOWS}, day)))
    print(f"wrote {TABLE}")
    if failed:
        print("compat-airflow: failed:\n  " + "\n  ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
