"""Fixtures over the real parts: a Kafka broker, topics, Spark with the connector, an Airflow home.

A missing prerequisite fails the test with what to install; nothing here skips silently.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.devstack.broker_nodes import JVM_OPTIONS_ENV
from tests.support.shared_services import shared_service

REPO = Path(__file__).resolve().parents[1]


def _interrupt_on_sigterm(*_: object) -> None:
    # A CI timeout sends SIGTERM: turn it into an interrupt so fixtures tear down what they started.
    raise KeyboardInterrupt("SIGTERM")


signal.signal(signal.SIGTERM, _interrupt_on_sigterm)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Spark drivers started by anything in this session map the class archive (``tests.support.class_archive``)
    and keep their scratch folders in the session's temporary folder; its Kafka nodes and Spark standalone daemons
    run on C1 alone.

    A run with two test workers or more (the full suite) writes it first if there is none, before the
    workers start: the deployment and the longest tests start first, and would start without it. A
    run with one worker (the smoke and broker-version subsets CI runs beside the suite) maps the one
    there is: its few Spark drivers would not earn back the archive's own run (about 22 CPU seconds,
    against 4 saved per driver).
    """
    from tests.support import class_archive
    from tests.support.pipeline import TEST_JIT

    config = session.config
    # Spark's block managers and scratch folders go under pytest's own temporary folder, which keeps
    # the last three runs: a killed driver (the chaos tests kill many) otherwise leaves them in /tmp.
    spark_local = config._tmp_path_factory.getbasetemp() / "spark-local"  # type: ignore[attr-defined]
    spark_local.mkdir(exist_ok=True)
    os.environ.setdefault("SPARK_LOCAL_DIRS", str(spark_local))
    # The tests' brokers live seconds to minutes on light loads: C2's compiling costs them more than it
    # earns (measured: 8.2 -> 4.6 CPU s for a node's start, 10,000 transactional records and stop;
    # 13.4 -> 7.2 at 300,000). `make bench` and the soak start theirs as users do.
    os.environ.setdefault(JVM_OPTIONS_ENV, TEST_JIT)
    # Spark's own variable for its standalone master and workers (measured: a master and two workers' start
    # and 30 s idle 15.4 -> 7.6 CPU s, up in 5.7 s instead of 9.0).
    os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", TEST_JIT)
    if (getattr(config.option, "numprocesses", None) or 0) >= 2 and not hasattr(config, "workerinput"):
        try:
            class_archive.write_now()
        except class_archive.ClassArchiveError as failed:
            # The run goes on without it (slower); test_class_archive fails with the same error.
            print(f"\nno Spark driver class archive for this run: {failed}", file=sys.stderr)
    class_archive.use_in_this_process()


def pytest_configure(config: pytest.Config) -> None:
    from tests.support.cpu_accounting import CpuAccounting

    worker = getattr(config, "workerinput", {}).get("workerid", "master")
    config.pluginmanager.register(CpuAccounting(worker), "eos-cpu-accounting")


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadscope`` (the Makefile's): the tests that hold a fixture one at a time on one worker
    (``tests.support.durations.make_scheduler``); any other ``--dist``: pytest-xdist's own."""
    if config.getvalue("dist") != "loadscope":
        return None
    from tests.support import durations

    return durations.make_scheduler(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest groups of tests first; a timeout per test from its recorded duration (``tests.support.durations``)."""
    from tests.support import durations

    recorded = durations.load()
    keys = durations.start_order([item.nodeid for item in items], recorded)
    items.sort(key=lambda item: keys[item.nodeid])
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(durations.timeout_for(recorded.get(item.nodeid))))


def kafka_version_under_test() -> str:
    """The brokers' Kafka version for this run: ``EOS_TEST_KAFKA_VERSION`` (``make compat``), else the default."""
    from airflow_provider_eos.devstack.jars import KAFKA_VERSION

    return os.environ.get("EOS_TEST_KAFKA_VERSION") or KAFKA_VERSION


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator:
    """A real single-node KRaft broker, started with the code of `eos devstack up`, one per test run
    (shared by the xdist workers), always stopped."""
    from airflow_provider_eos.devstack.broker import LocalKafka

    with shared_service(tmp_path_factory, worker_id, "kafka-broker",
                        lambda folder, owner: LocalKafka(folder).up(stop_with_pid=owner,
                                                                    kafka_version=kafka_version_under_test()),
                        lambda folder: LocalKafka(folder).down()) as info:
        yield info


@pytest.fixture(scope="module")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Three KRaft broker+controller nodes (`eos devstack up --brokers 3`), always stopped; faults through
    ``LocalKafka(info.state_dir).fault(action, node_id)``.

    One per xdist worker, unlike the single brokers: its tests kill and pause brokers, and two faults at
    once would take the quorum (and min.insync.replicas) from both tests. Per module: two modules use
    it, and three idle brokers kept to the end of the run cost more CPU than a second start.
    """
    from airflow_provider_eos.devstack.broker import LocalKafka

    kafka = LocalKafka(tmp_path_factory.mktemp("kafka-cluster"), heap="384m")
    try:
        yield kafka.up(stop_with_pid=os.getpid(), brokers=3, kafka_version=kafka_version_under_test())
    finally:
        # Its data is thrown away: no controlled shutdown of a quorum that loses its voters one by one.
        kafka.down(timeout_s=5)


@pytest.fixture(scope="session")
def bootstrap(kafka_broker) -> str:
    return kafka_broker.bootstrap_servers


@pytest.fixture(scope="session")
def secured_kafka(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator:
    """A real broker with SASL/SCRAM over TLS and the StandardAuthorizer (`eos devstack up --security sasl_ssl`),
    one per test run (shared by the xdist workers).

    Always stopped, and by a reaper if pytest dies. Its admin super user's settings: ``secured_admin_settings``.
    """
    from airflow_provider_eos.devstack.broker import LocalKafka

    with shared_service(tmp_path_factory, worker_id, "secured-kafka",
                        lambda folder, owner: LocalKafka(folder, security="sasl_ssl").up(
                            stop_with_pid=owner, kafka_version=kafka_version_under_test()),
                        lambda folder: LocalKafka(folder, security="sasl_ssl").down()) as info:
        yield info


@pytest.fixture(scope="session")
def secured_admin_settings(secured_kafka) -> dict:
    """The admin super user's librdkafka settings (the secured broker's ``client.config``). Holds its password."""
    return secured_kafka.client_settings()


@pytest.fixture(scope="session")
def _pausable_secured_kafka(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator:
    from airflow_provider_eos.devstack.broker import LocalKafka

    with shared_service(tmp_path_factory, worker_id, "pausable-secured-kafka",
                        lambda folder, owner: LocalKafka(folder, heap="384m", security="sasl_ssl").up(
                            stop_with_pid=owner, kafka_version=kafka_version_under_test()),
                        lambda folder: LocalKafka(folder, security="sasl_ssl").down()) as info:
        yield info


@pytest.fixture
def pausable_secured_kafka(_pausable_secured_kafka, tmp_path_factory: pytest.TempPathFactory,
                           worker_id: str) -> Iterator:
    """A secured broker (as ``secured_kafka``) for the tests that pause it (SIGSTOP), held by one test at a time.

    Not the shared secured broker: a pause there stalls whatever the other xdist worker runs on it (the
    secured pipeline's transactions, another silent-broker test's deadlines; CI failed on both). Its turn is
    an ``flock`` beside the service, held from before the test's setup to after its teardown.
    """
    base = tmp_path_factory.getbasetemp()
    turn = (base.parent if worker_id != "master" else base) / "pausable-secured-kafka.turn"
    with turn.open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield _pausable_secured_kafka
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture
def pausable_admin_settings(pausable_secured_kafka) -> dict:
    """The pausable secured broker's admin super user's librdkafka settings. Holds its password."""
    return pausable_secured_kafka.client_settings()


@pytest.fixture(scope="session")
def _spark_standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A Spark standalone master and two workers on different loopback host names, always stopped.

    One per xdist worker, unlike the brokers: its tests kill workers, executors and Python workers of
    the cluster on purpose, and must not hit another test's application.
    """
    from tests.support.spark_standalone import StandaloneCluster

    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"))
    try:
        yield cluster.up()
    finally:
        cluster.down()


@pytest.fixture
def spark_standalone(_spark_standalone_cluster):
    """The session's standalone cluster once the previous test's application left it: every core free."""
    _spark_standalone_cluster.wait_until_idle()
    return _spark_standalone_cluster


@pytest.fixture
def topic_factory(bootstrap: str) -> Callable[..., str]:
    """Create a uniquely named topic: ``topic_factory("in", partitions=4)``."""
    from tests.support.kafka import create_topic

    def make(stem: str = "t", partitions: int = 1, config: dict | None = None) -> str:
        return create_topic(bootstrap, f"{stem}-{uuid.uuid4().hex[:10]}", partitions, config)

    return make


@pytest.fixture(scope="session")
def connector_jars() -> list[Path]:
    from airflow_provider_eos.devstack.jars import executor_writer_jar, spark_connector_jars

    # The JVM executor writer's jar beside the connector's, as spark-submit gets it for `executor_writer: jvm`.
    return [*spark_connector_jars(), executor_writer_jar()]


@pytest.fixture(scope="session")
def spark(connector_jars: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A local SparkSession with Spark's Kafka connector jars (resolved by Maven)."""
    from airflow_provider_eos.devstack.jars import require_java

    require_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from tests.support.pipeline import TEST_SPARK_CONF

    session = (
        SparkSession.builder.master("local[2]")
        .appName("eos-tests")
        .config("spark.jars", ",".join(str(j) for j in connector_jars))
        .config("spark.driver.memory", "1g")
        .config("spark.driver.extraJavaOptions", TEST_SPARK_CONF["spark.driver.extraJavaOptions"])
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .getOrCreate()
    )
    try:
        yield session
    finally:
        session.stop()
        # py4j logs "Closing down clientserver connection" from __del__ at interpreter exit,
        # after pytest closed its capture stream: a "Logging error" below the summary line.
        import logging

        logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A temporary AIRFLOW_HOME with a migrated SQLite metadata DB, and the repo's dags folder."""
    home = tmp_path_factory.mktemp("airflow-home")
    env = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        result = subprocess.run(
            [str(Path(sys.executable).with_name("airflow")), "db", "migrate"],
            capture_output=True, text=True, check=False, timeout=600,
        )
        assert result.returncode == 0, f"airflow db migrate failed:\n{result.stdout}\n{result.stderr}"
        yield home
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def new_york_time() -> Iterator[None]:
    """This process's local time zone is America/New_York (UTC-5 or -4), as on a worker not set to UTC."""
    import time

    before = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.fixture
def run_input_not_read(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The submit operator does not read its run's input (``record_run_input``): the spec's brokers of an
    operator test do not exist, and the read would wait for one to answer. Yields the specs it was given.

    tests/integration/test_submit_run_input.py reads it for real.
    """
    from airflow_provider_eos.operators import spark_submit

    given: list[object] = []
    monkeypatch.setattr(spark_submit, "record_run_input", lambda ti, spec, log: given.append(spec))
    return given
