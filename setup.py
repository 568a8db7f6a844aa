"""Build hook: a wheel carries what a checkout builds or keeps beside the package.

setup.cfg declares everything else. A wheel (not an editable install: a checkout uses its own
``jvm/`` and ``dags/`` in place) gets:

* ``airflow_provider_eos/jars/eos-executor-writer.jar``: the JVM executor writer (``executor_writer:
  jvm``) built from ``jvm/`` with Maven, so a ``pip install`` user needs no Maven and no checkout.
  ``EOS_WHEEL_WITHOUT_JAR=1`` skips that build, so the wheel carries the jar only if ``jvm/target``
  holds a current one (a spec that needs the jar is then refused at submit with the fix, unless
  ``$EOS_HOME/jars`` holds it).
* ``airflow_provider_eos/example_dags/``: copies of ``dags/*.py`` and ``dags/pipelines/`` (as Airflow's
  providers ship ``example_dags``), which the DAG files read next to themselves.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
JAR_NAME = "eos-executor-writer.jar"
#: Seconds the jar's Maven build may take (a cold ~/.m2 downloads Spark's API jars).
MAVEN_TIMEOUT_S = 1800


def _newest_source(module: Path) -> float:
    return max(p.stat().st_mtime for p in module.rglob("*") if p.is_file() and "target" not in p.parts)


def _executor_writer_jar(module: Path) -> Path | None:
    """``jvm/target``'s jar, rebuilt with Maven unless it is newer than every source; None if skipped."""
    built = module / "target" / JAR_NAME
    if built.is_file() and built.stat().st_mtime >= _newest_source(module):
        return built  # `make install` (or an earlier wheel build) built these very sources
    if os.environ.get("EOS_WHEEL_WITHOUT_JAR") == "1":
        print(f"EOS_WHEEL_WITHOUT_JAR=1: the wheel carries no {JAR_NAME}")
        return None
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SystemExit(f"building the wheel needs Apache Maven 3.8+ and a JDK 17+ to build {JAR_NAME} from jvm/ "
                         "(Debian: apt-get install maven openjdk-17-jdk-headless); or set EOS_WHEEL_WITHOUT_JAR=1")
    settings = ROOT / "airflow_provider_eos" / "devstack" / "maven" / "settings.xml"
    # The pom's spark.version is the one setup.cfg's pyspark range and the constraints files pin.
    subprocess.run([mvn, "-B", "-q", "-gs", str(settings), "-f", str(module / "pom.xml"), "package"],
                   check=True, stdin=subprocess.DEVNULL, timeout=MAVEN_TIMEOUT_S)
    if not built.is_file():
        raise SystemExit(f"Maven finished without {built}")
    return built


class BuildPyWithJarAndDags(build_py):
    """``build_py`` plus the executor writer's jar and the example DAGs, for wheels only."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False) or not (ROOT / "dags").is_dir():
            return
        package = Path(self.build_lib) / "airflow_provider_eos"
        example_dags = package / "example_dags"
        if example_dags.exists():
            shutil.rmtree(example_dags)
        shutil.copytree(ROOT / "dags", example_dags, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (example_dags / "__init__.py").write_text(
            '"""The example DAGs (copies of the repository\'s dags/): point a dags folder here or copy them."""\n')
        if (ROOT / "jvm" / "pom.xml").is_file() and (jar := _executor_writer_jar(ROOT / "jvm")) is not None:
            (package / "jars").mkdir(exist_ok=True)
            shutil.copy2(jar, package / "jars" / JAR_NAME)


setup(cmdclass={"build_py": BuildPyWithJarAndDags})
