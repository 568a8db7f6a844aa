"""Resolve the JVM parts (Kafka broker and tools, Spark's Kafka connector) from Maven Central.

Maven, not Spark's ``--packages``/Ivy, does the resolution so that it works wherever Maven
works (mirrors, proxies in ``~/.m2/settings.xml``) and is cached: a second call is a stat of a
stamp file.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

from airflow_provider_eos.configuration import setting
from airflow_provider_eos.core.errors import DevstackError, PrerequisiteError
from airflow_provider_eos.core.progress import heartbeat
from airflow_provider_eos.subprocesses import run_bounded

#: The broker the devstack starts unless asked for another (``eos devstack up --kafka-version``).
KAFKA_VERSION = "4.4.0"
#: The broker versions the compatibility matrix tests (``make compat``): the last 3.x, the default, the newest
#: Maven Central serves here. Other versions from 3.9 on start too, untested.
KAFKA_VERSIONS = ("3.9.2", "4.1.1", "4.4.0")
_OLDEST_KAFKA = (3, 9)
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
#: Seconds one Maven resolution may take: the Hadoop MiniCluster's jars are a few hundred MB from a
#: cold cache; a stalled download must end in an error, not hang `eos jars` or a task.
MAVEN_TIMEOUT_S = 1800.0
_MAVEN_DIR = Path(__file__).with_name("maven")
_STAMP = ".eos-resolved"
_ARTIFACT_NAME = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


def eos_home() -> Path:
    """Where caches and the devstack live: ``$EOS_HOME``, ``[eos] home`` or ``~/.cache/airflow-provider-eos``."""
    # Absolute: a relative $EOS_HOME would reach the JVMs and Airflow (see LocalKafka) as a relative path.
    return Path(setting("home") or Path.home() / ".cache" / "airflow-provider-eos").expanduser().resolve()


def require_tool(name: str, install_hint: str) -> str:
    """Return the path of an executable or raise a PrerequisiteError that says how to install it."""
    found = shutil.which(name)
    if not found:
        raise PrerequisiteError(f"`{name}` was not found on PATH.", fix=install_hint)
    return found


def require_java() -> str:
    """The ``java`` executable (JAVA_HOME first), or a clear error."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    return require_tool("java", "install a JDK 17 or newer (Debian: `apt-get install openjdk-17-jdk-headless`).")


def pyspark_version() -> str:
    """The installed PySpark distribution's version; the connector must match it exactly."""
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError as exc:
        raise PrerequisiteError(
            "PySpark is not installed.", fix="run `make install` (installs the pinned pyspark)."
        ) from exc


def pyspark_jars_dir() -> Path:
    """The ``jars/`` folder of the full PySpark distribution (absent from ``pyspark-client``)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise PrerequisiteError("PySpark is not importable.", fix="run `make install`.")
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    if not jars.is_dir():
        raise PrerequisiteError(
            f"{jars} does not exist: the installed `pyspark` is the thin Spark Connect client, "
            "not the full distribution.",
            fix=f"pip install --force-reinstall --no-deps pyspark=={pyspark_version()}",
        )
    return jars


def _resolve(pom_name: str, target: Path, properties: dict[str, str], *, resolve: bool = True) -> Path:
    pom = _MAVEN_DIR / pom_name
    fingerprint = hashlib.sha256(pom.read_bytes() + repr(sorted(properties.items())).encode()).hexdigest()
    stamp = target / _STAMP
    if stamp.exists() and stamp.read_text().strip() == fingerprint:
        return target
    if not resolve:
        raise PrerequisiteError(
            f"the jars of {pom_name} with {properties} are not resolved in {target}, and resolving them with Maven "
            "at task time was not asked for",
            fix="run `eos jars` once on this machine, or set the spec's connector (jars by path or URL, "
            "or Maven packages that spark-submit resolves)",
        )
    mvn = require_tool("mvn", "install Apache Maven 3.8+ (Debian: `apt-get install maven`).")
    require_java()
    build_dir = eos_home() / "maven-build" / pom.stem
    build_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(pom, build_dir / "pom.xml")
    if target.exists():
        shutil.rmtree(target)
    log = build_dir / "maven.log"
    command = [
        mvn, "-B", "-q", "-gs", str(_MAVEN_DIR / "settings.xml"), "-f", str(build_dir / "pom.xml"),
        "package", f"-Djars.dir={target}", *(f"-D{k}={v}" for k, v in properties.items()),
    ]
    # A first resolution downloads hundreds of jars for minutes, printing only to its log.
    with heartbeat(f"resolving the jars of {pom_name} with Maven", detail=f"log: {log}"), log.open("w") as out:
        result = run_bounded(command, timeout_s=MAVEN_TIMEOUT_S, error=PrerequisiteError,
                             fix=f"read {log} (a stalled download, a proxy); check network access to Maven Central "
                             "and rerun `eos jars`.", stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise PrerequisiteError(
            f"Maven could not resolve {pom_name} with {properties} (exit {result.returncode}):\n{tail}",
            fix=f"check network access to Maven Central and {log}; rerun `eos jars`.",
        )
    stamp.write_text(fingerprint)
    return target


def check_kafka_version(version: str) -> str:
    """``version`` if the devstack can start a broker of it (3.9.0 or later, ``X.Y.Z``).

    :raises DevstackError: naming the version and the tested ones.
    """
    found = _VERSION.match(version)
    if found is None or (int(found[1]), int(found[2])) < _OLDEST_KAFKA:
        raise DevstackError(
            f"Kafka version {version!r} cannot run in the devstack: it starts KRaft brokers of 3.9.0 or later, "
            "given as X.Y.Z",
            fix=f"pass one of the tested versions {', '.join(KAFKA_VERSIONS)} (default {KAFKA_VERSION})")
    return version


def kafka_version_argument(text: str) -> str:
    """``--kafka-version`` of the bench and the soak (an argparse ``type``): :func:`check_kafka_version`,
    its refusal (the value and the tested versions) turned into argparse's usage error before anything starts."""
    try:
        return check_kafka_version(text)
    except DevstackError as exc:
        raise argparse.ArgumentTypeError(f"{exc.message}; {exc.fix}") from exc


def kafka_jars_dir(version: str = KAFKA_VERSION) -> Path:
    """Kafka broker + tools jars (``kafka.Kafka``, ``TransactionsCommand``, ``ProducerPerformance``) of ``version``."""
    version = check_kafka_version(version)
    return _resolve("kafka-pom.xml", eos_home() / "jars" / f"kafka-{version}", {"kafka.version": version})


def spark_kafka_jars_dir(*, resolve: bool = True) -> Path:
    """``spark-sql-kafka-0-10_2.13`` of exactly the installed PySpark version, with its runtime jars.

    :param resolve: run Maven if they are not resolved yet; ``False`` raises instead.
    """
    version = pyspark_version()
    return _resolve(
        "spark-kafka-pom.xml", eos_home() / "jars" / f"spark-kafka-{version}", {"spark.version": version},
        resolve=resolve,
    )


def spark_connector_jars(*, resolve: bool = True) -> list[Path]:
    """The connector jars to pass to Spark, minus artifacts PySpark already ships.

    Duplicates of Spark's own jars (hadoop-client, scala-library, slf4j) on the classpath in a
    different version are a classic source of ``NoSuchMethodError``; Spark's copies win.

    :param resolve: run Maven if they are not resolved yet; ``False`` (spark-submit at task time)
        raises a :class:`PrerequisiteError` that says how to resolve them instead.
    """
    bundled = {
        m.group("artifact") for j in pyspark_jars_dir().glob("*.jar") if (m := _ARTIFACT_NAME.match(j.name))
    }
    selected = []
    for jar in sorted(spark_kafka_jars_dir(resolve=resolve).glob("*.jar")):
        match = _ARTIFACT_NAME.match(jar.name)
        if match is None or match.group("artifact") not in bundled:
            selected.append(jar)
    return selected


#: The JVM executor writer's Maven module: a checkout's ``jvm/`` (``make install`` builds it through ``eos jars``).
EXECUTOR_WRITER_MODULE = Path(__file__).resolve().parents[2] / "jvm"
EXECUTOR_WRITER_JAR = "eos-executor-writer.jar"
#: The Maven module's test jar, built beside it: the crash tests' task observer (``jvm/src/test``). A
#: checkout's tests find it next to the writer's jar; a wheel never carries it.
EXECUTOR_WRITER_TEST_JAR = "eos-executor-writer-tests.jar"
#: Where a wheel carries the jar (setup.py's build step builds jvm/ into the package).
PACKAGED_EXECUTOR_WRITER_JAR = Path(__file__).resolve().parents[1] / "jars" / EXECUTOR_WRITER_JAR
#: What to do when the JVM executor writer's jar is missing, wherever that is found (submit, driver).
EXECUTOR_WRITER_FIX = ("reinstall airflow-provider-eos from a wheel that carries it, or run `make install` "
                       "(or `eos jars`) in a checkout of airflow-provider-eos, which builds jvm/ with Maven; or "
                       "set the spec's `writers: driver` and `executor_writer: python`, which need no jar")


def _module_fingerprint(module: Path) -> str:
    digest = hashlib.sha256(pyspark_version().encode())
    for path in sorted(p for p in module.rglob("*") if p.is_file() and "target" not in p.relative_to(module).parts):
        digest.update(path.relative_to(module).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def executor_writer_jar(*, build: bool = True) -> Path:
    """The JVM executor writer's jar (``executor_writer: jvm``): the wheel's, else built from ``jvm/``.

    An installed wheel carries it in the package (:data:`PACKAGED_EXECUTOR_WRITER_JAR`). A checkout builds
    it when missing or stale into ``$EOS_HOME/jars/eos-executor-writer/`` beside the connector's jars; spark-submit
    gets it with ``--jars`` (:func:`airflow_provider_eos.spark.submit_command.connector_arguments`).

    :param build: run Maven if the jar is missing or older than its sources; ``False`` (spark-submit
        at task time) raises instead.
    :raises PrerequisiteError: naming the fix, when the jar is missing and cannot (or may not) be built.
    """
    if PACKAGED_EXECUTOR_WRITER_JAR.is_file():
        return PACKAGED_EXECUTOR_WRITER_JAR  # built from this very version's jvm/ when the wheel was
    target = eos_home() / "jars" / "eos-executor-writer"
    jar = target / EXECUTOR_WRITER_JAR
    module = EXECUTOR_WRITER_MODULE
    if not (module / "pom.xml").is_file():
        if jar.is_file():
            return jar  # an installed package: the jar a checkout's `make install` built
        raise PrerequisiteError(f"the JVM executor writer's jar {jar} does not exist", fix=EXECUTOR_WRITER_FIX)
    fingerprint = _module_fingerprint(module)
    stamp = target / _STAMP
    if jar.is_file() and stamp.is_file() and stamp.read_text().strip() == fingerprint:
        return jar
    if not build:
        state = "is older than its sources in" if jar.is_file() else "is not built from"
        raise PrerequisiteError(f"the JVM executor writer's jar {jar} {state} {module}", fix=EXECUTOR_WRITER_FIX)
    mvn = require_tool("mvn", "install Apache Maven 3.8+ (Debian: `apt-get install maven`).")
    require_java()
    target.mkdir(parents=True, exist_ok=True)
    log = target / "maven.log"
    command = [mvn, "-B", "-q", "-gs", str(_MAVEN_DIR / "settings.xml"), "-f", str(module / "pom.xml"), "package",
               f"-Dspark.version={pyspark_version()}"]
    with heartbeat(f"building the JVM executor writer ({module.name}) with Maven", detail=f"log: {log}"), \
            log.open("w") as out:
        result = run_bounded(command, timeout_s=MAVEN_TIMEOUT_S, error=PrerequisiteError,
                             fix=f"read {log}; check network access to Maven Central and rerun `eos jars`.",
                             stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    built = module / "target" / EXECUTOR_WRITER_JAR
    if result.returncode != 0 or not built.is_file():
        tail = "\n".join(log.read_text().splitlines()[-20:])
        raise PrerequisiteError(f"Maven could not build {module} (exit {result.returncode}):\n{tail}",
                                fix=f"read {log}; check network access to Maven Central and rerun `eos jars`.")
    shutil.copy(built, jar)
    shutil.copy(module / "target" / EXECUTOR_WRITER_TEST_JAR, target / EXECUTOR_WRITER_TEST_JAR)
    stamp.write_text(fingerprint)
    return jar


def kafka_classpath(version: str = KAFKA_VERSION) -> str:
    """A Java classpath with every Kafka jar of ``version``."""
    return str(kafka_jars_dir(version) / "*")
