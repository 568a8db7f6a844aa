"""The spark-submit command line of a pipeline: the one place the Airflow operator and ``eos run`` share.

Imports no PySpark: it only locates files (entry script, connector jars, the zipped package).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from airflow_provider_eos.core.driver import ENTRY_SCRIPT
from airflow_provider_eos.core.errors import PrerequisiteError
from airflow_provider_eos.core.spec import Mode, PipelineSpec
from airflow_provider_eos.kafka.settings.java import SPARK_OPTIONS_REDACTION_REGEX
from airflow_provider_eos.spark.noop_sink import BENCH_NOOP_MODE

# The entry script and example transforms live inside this package (``airflow_provider_eos.jobs``).
PACKAGES_SHIPPED = ("airflow_provider_eos",)
# Driver mode collects each batch on the driver; Arrow makes that a columnar transfer.
DEFAULT_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.memory": "1g",
    # The Kafka source's options carry sasl.jaas.config and inline PEM keys: keep them out of
    # plans, the UI and event logs.
    "spark.sql.redaction.options.regex": SPARK_OPTIONS_REDACTION_REGEX,
}


@dataclass(frozen=True)
class SubmitPlan:
    """What spark-submit needs for one pipeline run."""

    application: Path
    application_args: list[str]
    jars: list[Path]
    py_files: list[Path]
    conf: dict[str, str] = field(default_factory=dict)

    def environment(self) -> dict[str, str]:
        """Driver and executors run this interpreter, which has the Kafka clients installed."""
        return {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}

    def command(self, spark_submit: str, master: str) -> list[str]:
        args = [spark_submit, "--master", master, "--jars", ",".join(map(str, self.jars)),
                "--py-files", ",".join(map(str, self.py_files))]
        for key, value in sorted(self.conf.items()):
            args += ["--conf", f"{key}={value}"]
        return [*args, str(self.application), *self.application_args]


def _package_root(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise PrerequisiteError(f"package {name!r} is not importable", fix="pip install airflow-provider-eos")
    return Path(next(iter(spec.submodule_search_locations)))


def zip_packages(target_dir: Path) -> Path:
    """Zip this package (job, writers, example transforms) for ``--py-files`` so executors can import transforms."""
    target_dir.mkdir(parents=True, exist_ok=True)
    archive = target_dir / "eos-py-files.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in PACKAGES_SHIPPED:
            root = _package_root(name)
            for path in sorted(root.rglob("*.py")):
                zf.write(path, path.relative_to(root.parent).as_posix())
    return archive


def entry_script() -> Path:
    """The spark-submit application: ``airflow_provider_eos/jobs/eos_job.py``."""
    return _package_root("airflow_provider_eos.jobs") / ENTRY_SCRIPT


def spark_submit_executable() -> str:
    """PySpark's own spark-submit (the one whose version matches the connector jars)."""
    spark_home = _package_root("pyspark")
    candidate = spark_home / "bin" / "spark-submit"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("spark-submit")
    if not found:
        raise PrerequisiteError("spark-submit was not found", fix="install the full pyspark distribution")
    return found


def plan_submit(spec_file: Path, spec: PipelineSpec, *, mode: Mode | str, work_dir: Path) -> SubmitPlan:
    from airflow_provider_eos.devstack.jars import spark_connector_jars

    return SubmitPlan(
        application=entry_script(),
        application_args=["--spec", str(spec_file), "--mode",
                          mode if mode == BENCH_NOOP_MODE else Mode(mode).value],
        jars=spark_connector_jars(),
        py_files=[zip_packages(work_dir)],
        conf={**DEFAULT_CONF, **spec.spark_conf},
    )
