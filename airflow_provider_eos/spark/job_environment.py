"""The job's Python environment, packed once into an archive that spark-submit ships with ``--archives``.

Spark documents three ways to ship Python dependencies (Python package management: conda-pack,
venv-pack, PEX). This module uses **venv-pack**:

- its archive has the shape ``--archives ENV.tar.gz#environment`` expects, with the interpreter at
  ``./environment/bin/python`` (the same shape conda-pack produces, so a conda-packed archive
  submits the same way);
- executors start a plain interpreter from the unpacked folder; a PEX bootstraps itself on each
  node into a cache in the user's home (``PEX_ROOT``), which cluster containers often cannot write;
- it is built from an ordinary ``python -m venv`` with pip and the project's constraints file, the
  way the project's own virtualenv is built.

The price: a venv-packed environment links to its base interpreter instead of carrying it, so
every node needs that Python (same minor version) at the same path; ``python_prefix`` rewrites the
link for nodes where it lives elsewhere (e.g. ``/usr``).

The environment holds the job's runtime (this distribution's packages, ``airflow_provider_eos`` and
the ``spark_jobs`` shell with the entry script and example transforms, and its non-Airflow requirements:
confluent-kafka, pyarrow, pandas, pydantic ...) pinned by the constraints file; no Airflow and
no PySpark: a Spark worker puts its own ``pyspark.zip`` and py4j on the Python workers'
``PYTHONPATH`` (``$SPARK_HOME/python/lib``, present in a pip-installed PySpark too), ahead of
the environment's site-packages, so a PySpark inside would be dead weight of the wrong version.

Building takes a minute or more, so a build is keyed by a content hash of its inputs (interpreter,
requirements, constraints, the distribution's package files): an archive whose recorded hash matches is reused.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from airflow_provider_eos.core.errors import JobEnvironmentError
from airflow_provider_eos.core.progress import heartbeat
from airflow_provider_eos.subprocesses import run_bounded

__all__ = [
    "DISTRIBUTION_PACKAGES",
    "ENVIRONMENT_ALIAS",
    "EXECUTOR_PYTHON",
    "BuiltEnvironment",
    "EnvironmentRecipe",
    "build_job_environment",
    "job_requirements",
]

log = logging.getLogger(__name__)

DISTRIBUTION = "airflow-provider-eos"
#: The distribution's top-level packages the job runs: the product and the Spark side's shell beside it.
DISTRIBUTION_PACKAGES = ("airflow_provider_eos", "spark_jobs")
#: The folder name Spark unpacks the archive to in each container's working dir (``ARCHIVE#alias``).
ENVIRONMENT_ALIAS = "environment"
#: The interpreter executors (and a cluster-mode driver) run from the unpacked archive.
EXECUTOR_PYTHON = f"./{ENVIRONMENT_ALIAS}/bin/python"
#: Requirements the job never needs on the cluster: Airflow (the submitting side), PySpark and py4j (Spark brings them)
#: and venv-pack (it builds the archive).
_NOT_SHIPPED = ("apache-airflow", "pyspark", "py4j", "venv-pack")
#: Bump when the way an environment is built changes, so old archives are rebuilt.
_RECIPE_FORMAT = 1
_RECORD_SUFFIX = ".eos.json"
#: Seconds one build step (creating the venv, one pip install) may take: a full install from a cold
#: cache takes minutes; a stalled index must end in an error, not hang `eos package` or a task.
STEP_TIMEOUT_S = 1800.0


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def job_requirements() -> list[str]:
    """This package's requirements the job needs on the cluster, with setup.cfg's version ranges.

    The base requirements and the ``spark`` extra, minus Airflow and its providers (the Airflow
    worker's business), PySpark (the Spark installation's) and venv-pack (the builder's).
    """
    from packaging.requirements import Requirement

    selected: list[str] = []
    for line in importlib.metadata.requires(DISTRIBUTION) or []:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": "spark"}):
            continue
        if _canonical(requirement.name).startswith(_NOT_SHIPPED):
            continue
        requirement.marker = None
        selected.append(str(requirement))
    return sorted(selected)


def _package_folder(name: str) -> Path:
    """Where the distribution's package ``name`` is imported from (found without importing it)."""
    found = importlib.util.find_spec(name)
    if found is None or not found.submodule_search_locations:
        raise JobEnvironmentError(f"package {name!r} of {DISTRIBUTION} is not importable",
                                  fix=f"reinstall {DISTRIBUTION} (pip install 'airflow-provider-eos[spark]')")
    return Path(next(iter(found.submodule_search_locations)))


def _package_root() -> Path:
    return _package_folder("airflow_provider_eos")


def _source_tree() -> Path | None:
    """The source checkout this package runs from (an editable install), or ``None`` for an installed wheel."""
    tree = _package_root().parent
    setup = tree / "setup.cfg"
    return tree if setup.is_file() and f"name = {DISTRIBUTION}" in setup.read_text() else None


def _package_digest() -> str:
    """A hash of every file of the distribution's packages (code and data), the package part of the recipe."""
    digest = hashlib.sha256()
    for package in DISTRIBUTION_PACKAGES:
        folder = _package_folder(package)
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            name = f"{package}/{path.relative_to(folder).as_posix()}"
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _default_constraints() -> str:
    """``constraints-3.X.txt`` of the source tree, else the versions installed here (what the driver runs)."""
    tree = _source_tree()
    name = f"constraints-{sys.version_info.major}.{sys.version_info.minor}.txt"
    if tree is not None and (tree / name).exists():
        return (tree / name).read_text()
    pins = {_canonical(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()}
    pins.pop(_canonical(DISTRIBUTION), None)
    return "".join(f"{name}=={version}\n" for name, version in sorted(pins.items()))


def _interpreter_version(python: str) -> str:
    try:
        result = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                                capture_output=True, text=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise JobEnvironmentError(f"the interpreter {python!r} does not run: {exc}",
                                  fix="pass --python with the path of a Python 3.11, 3.12 or 3.13 interpreter") from exc
    return result.stdout.strip()


@dataclass(frozen=True)
class EnvironmentRecipe:
    """Everything a build depends on; equal recipes give interchangeable archives.

    :param python: the base interpreter of the environment.
    :param python_version: its full version (``3.11.7``).
    :param machine: the platform the wheels are for (``Linux-x86_64``).
    :param requirements: the job's requirements (:func:`job_requirements`) plus any extra ones.
    :param constraints: the constraints file's text, pinning every version.
    :param package_digest: the hash of this package's files.
    :param python_prefix: where nodes have the base interpreter, if not where it is here.
    """

    python: str
    python_version: str
    machine: str
    requirements: tuple[str, ...]
    constraints: str
    package_digest: str
    python_prefix: str | None = None

    @classmethod
    def current(cls, *, python: str | None = None, constraints: Path | None = None,
                extra_requirements: tuple[str, ...] = (), python_prefix: str | None = None) -> EnvironmentRecipe:
        """The recipe for this package as installed here, built on ``python`` (default: this interpreter)."""
        interpreter = python or sys.executable
        version = _interpreter_version(interpreter)
        driver = platform.python_version()
        if version.split(".")[:2] != driver.split(".")[:2]:
            raise JobEnvironmentError(
                f"{interpreter} is Python {version}, but the driver in client deploy mode runs this interpreter, "
                f"Python {driver}; PySpark refuses workers whose Python differs from the driver's",
                fix=f"pass --python with a Python {'.'.join(driver.split('.')[:2])} interpreter",
            )
        if constraints is not None and not constraints.is_file():
            raise JobEnvironmentError(f"constraints file {constraints} does not exist",
                                      fix="pass --constraints with an existing pip constraints file")
        return cls(
            python=interpreter, python_version=version, machine=f"{platform.system()}-{platform.machine()}",
            requirements=(*job_requirements(), *extra_requirements),
            constraints=constraints.read_text() if constraints else _default_constraints(),
            package_digest=_package_digest(), python_prefix=python_prefix,
        )

    def fingerprint(self) -> str:
        """The content hash that decides whether an existing archive can be reused."""
        payload = json.dumps({"format": _RECIPE_FORMAT, **asdict(self)}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class BuiltEnvironment:
    """An archive ready for ``--archives``.

    :param archive: the ``.tar.gz``.
    :param fingerprint: its recipe's content hash.
    :param reused: ``True`` if an archive built earlier from the same recipe was kept.
    :param seconds: how long this call took.
    """

    archive: Path
    fingerprint: str
    reused: bool
    seconds: float


def _record_path(archive: Path) -> Path:
    return archive.with_name(archive.name + _RECORD_SUFFIX)


def _recorded_fingerprint(archive: Path) -> str | None:
    record = _record_path(archive)
    if not (archive.is_file() and record.is_file()):
        return None
    try:
        return json.loads(record.read_text()).get("fingerprint")
    except (OSError, ValueError):
        return None


def _run(command: list[str], step: str, log_file: Path) -> None:
    # Each step takes from seconds to minutes and prints only to its log: say what runs, and that it still does.
    with heartbeat(step, detail=f"log: {log_file}"), log_file.open("a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        try:
            result = run_bounded(command, timeout_s=STEP_TIMEOUT_S, error=JobEnvironmentError,
                                 fix=f"read {log_file}; check access to the package index (a stalled download)",
                                 stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        except JobEnvironmentError as exc:
            raise JobEnvironmentError(f"building the job environment stopped at {step}: {exc.message}",
                                      fix=exc.fix) from None
    if result.returncode != 0:
        tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-15:])
        raise JobEnvironmentError(
            f"building the job environment failed at {step} (exit {result.returncode}):\n{tail}",
            fix=f"read {log_file}; check access to the package index and the constraints file",
        )


def _install_package(pip: list[str], work: Path, log_file: Path) -> None:
    """This package without its requirements (installed pinned before): from its source folder or the index."""
    tree = _source_tree()
    if tree is None:
        version = importlib.metadata.version(DISTRIBUTION)
        _run([*pip, "--no-deps", f"{DISTRIBUTION}=={version}"], "installing this package", log_file)
        return
    # A copy of the distribution's files only: pip builds in the source folder and would leave build/ there.
    source = work / "source"
    source.mkdir()
    for item in tree.iterdir():
        if item.is_file():
            shutil.copy2(item, source / item.name)
    for package in DISTRIBUTION_PACKAGES:
        shutil.copytree(tree / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _run([*pip, "--no-deps", str(source)], "installing this package", log_file)


def build_job_environment(
    out: Path, recipe: EnvironmentRecipe | None = None, *, force: bool = False
) -> BuiltEnvironment:
    """Build (or reuse) the job's packed environment at ``out``.

    :param out: the archive to write (``.tar.gz``); its recipe is recorded beside it in ``OUT.eos.json``.
    :param recipe: what to build; default :meth:`EnvironmentRecipe.current`.
    :param force: rebuild even if ``out`` was built from the same recipe.
    :raises JobEnvironmentError: naming the failed step and its log.
    """
    started = time.monotonic()
    out = out.expanduser().resolve()
    if not out.name.endswith(".tar.gz"):
        raise JobEnvironmentError(f"{out} does not end with .tar.gz",
                                  fix="name the archive like eos-job-env.tar.gz (Spark unpacks it by its suffix)")
    recipe = recipe or EnvironmentRecipe.current()
    fingerprint = recipe.fingerprint()
    if not force and _recorded_fingerprint(out) == fingerprint:
        log.info("Reusing %s (recipe %s unchanged)", out, fingerprint[:12])
        return BuiltEnvironment(out, fingerprint, True, time.monotonic() - started)
    try:
        import venv_pack
    except ImportError as exc:
        raise JobEnvironmentError("venv-pack is not installed",
                                  fix="pip install 'airflow-provider-eos[spark]' (it brings venv-pack)") from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".eos-env-build-", dir=out.parent) as tmp:
        work = Path(tmp)
        venv, constraints, log_file = work / "venv", work / "constraints.txt", out.with_name(out.name + ".log")
        log_file.write_text("")
        constraints.write_text(recipe.constraints)
        _run([recipe.python, "-m", "venv", str(venv)], "creating the virtualenv", log_file)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]
        _run([*pip, "-c", str(constraints), *recipe.requirements], "installing the requirements", log_file)
        _install_package(pip, work, log_file)
        packed = work / out.name
        try:
            with heartbeat("packing the environment (venv-pack)"):
                venv_pack.pack(prefix=str(venv), output=str(packed), python_prefix=recipe.python_prefix)
        except Exception as exc:  # venv-pack raises its own VenvPackException and OSErrors
            raise JobEnvironmentError(f"venv-pack could not pack {venv}: {exc}",
                                      fix=f"read {log_file}; an editable install cannot be packed") from exc
        packed.replace(out)
    seconds = time.monotonic() - started
    _record_path(out).write_text(json.dumps(
        {"fingerprint": fingerprint, "build_seconds": round(seconds, 1), "recipe": {
            k: v for k, v in asdict(recipe).items() if k != "constraints"}}, indent=2, sort_keys=True))
    log.info("Built %s in %.0f s (recipe %s)", out, seconds, fingerprint[:12])
    return BuiltEnvironment(out, fingerprint, False, seconds)
