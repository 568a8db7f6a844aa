"""The bench's and the soak's ``--kafka-version`` (and ``make bench|soak KAFKA_VERSION=``): parsed through the
devstack's check, passed to the brokers they start, and recorded in their results as the version that ran."""

from __future__ import annotations

import contextlib
import json
import subprocess
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.devstack.jars import KAFKA_VERSION, KAFKA_VERSIONS
from soak.schedule import build

REPO = Path(__file__).resolve().parents[2]
OLDEST = KAFKA_VERSIONS[0]
PROTOCOL = "transactions v1 (metadata.version=21)"


class FakeBroker:
    """What the tools see of :class:`~airflow_provider_eos.devstack.broker.LocalKafka`: the version asked for."""

    started: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def up(self, *, kafka_version: str = KAFKA_VERSION, **kwargs: Any) -> Any:
        FakeBroker.started.append(kafka_version)
        return types.SimpleNamespace(kafka_version=kafka_version, bootstrap_servers="127.0.0.1:1",
                                     client_settings=lambda: {"bootstrap.servers": "127.0.0.1:1"})

    def down(self) -> None:
        pass


@pytest.fixture
def fake_broker(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from airflow_provider_eos.devstack import broker
    from airflow_provider_eos.kafka import broker_protocol

    FakeBroker.started = []
    monkeypatch.setattr(broker, "LocalKafka", FakeBroker)
    monkeypatch.setattr(broker_protocol, "describe_protocol", lambda config: PROTOCOL)
    return FakeBroker.started


def _refusal(capsys: pytest.CaptureFixture[str], parse: Any, version: str) -> str:
    with pytest.raises(SystemExit) as exited:
        parse(["--kafka-version", version])
    assert exited.value.code == 2  # argparse's usage error, before anything starts
    return capsys.readouterr().err


@pytest.mark.parametrize("version", ["3.8.1", "4.1", "latest"])
def test_both_refuse_a_version_the_devstack_cannot_start_naming_it_and_the_tested_ones(
        version: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.__main__ as bench_main
    from soak.__main__ import _args

    for parse in (_args, bench_main.main):
        monkeypatch.setattr(bench_main, "run_benches", lambda *a, **k: pytest.fail("the bench ran"))
        err = _refusal(capsys, parse, version)
        assert "argument --kafka-version" in err and repr(version) in err
        assert ", ".join(KAFKA_VERSIONS) in err


def test_the_soak_takes_the_version_and_its_replay_line_names_it() -> None:
    from soak.__main__ import _args, reproduce_command

    assert _args([]).kafka_version == KAFKA_VERSION
    args = _args(["--seed", "3", "--records", "5000", "--faults", "2", "--kafka-version", OLDEST])
    command = reproduce_command(args, 3, ("driver", "executors"))
    assert f" --kafka-version {OLDEST}" in command
    assert vars(_args(command.split()[3:])) == vars(args)  # after "python -m soak": the same run
    # The default is spelled out too: the line must replay on the same broker whatever the default becomes.
    assert f" --kafka-version {KAFKA_VERSION}" in reproduce_command(_args(["--faults", "2"]), 1, ("driver",))


def test_the_soak_starts_its_brokers_of_the_version_and_records_what_they_ran(
        fake_broker: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from soak import run

    asked: list[str] = []

    @contextlib.contextmanager
    def devstack(work_dir: Path, kafka_version: str) -> Iterator[Any]:
        asked.append(kafka_version)
        yield run.Stack(kafka=None, cluster=FakeBroker().up(kafka_version=kafka_version), spark=None, master_url="")

    monkeypatch.setattr(run, "devstack", devstack)
    monkeypatch.setattr(run, "run_phase", lambda phase, mode, label, *rest: {"label": label})
    results: dict[str, Any] = {"phases": [], "meta": {"kafka": OLDEST}}
    run.run_schedule(build(1, records=100, faults=2), run.Settings(batch=50, kafka_version=OLDEST), tmp_path, results)
    assert asked == [OLDEST] == fake_broker
    assert results["meta"]["kafka"] == OLDEST and results["meta"]["kafka_protocol"] == PROTOCOL
    assert [p["label"] for p in results["phases"]] == ["driver", "executors", "control-driver", "control-executors"]


def test_the_soak_s_devstack_passes_the_version_to_the_brokers(fake_broker: list[str], monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    from airflow_provider_eos.devstack import spark_cluster
    from soak import run

    cluster = types.SimpleNamespace(up=lambda **kwargs: types.SimpleNamespace(master_url="spark://x"),
                                    down=lambda: None)
    monkeypatch.setattr(spark_cluster, "SparkCluster", lambda folder: cluster)
    monkeypatch.setattr(FakeBroker, "status", lambda self: None, raising=False)
    with run.devstack(tmp_path, OLDEST) as stack:
        assert stack.cluster.kafka_version == OLDEST
    assert fake_broker == [OLDEST]


def test_a_protocol_that_cannot_be_read_is_recorded_as_such_not_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_eos.kafka import broker_protocol
    from bench.run_record import broker_facts as bench_facts
    from soak.run import broker_facts as soak_facts

    def unreachable(config: Any) -> str:
        raise OSError("no broker")

    monkeypatch.setattr(broker_protocol, "describe_protocol", unreachable)
    info = FakeBroker().up(kafka_version=OLDEST)
    for facts in (bench_facts, soak_facts):
        assert facts(info) == {"kafka": OLDEST, "kafka_protocol": "not read (OSError: no broker)"}


def test_the_bench_starts_its_broker_of_the_version_and_records_it_in_meta_and_command(
        fake_broker: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import bench.__main__ as bench_main

    written: list[dict[str, Any]] = []
    monkeypatch.setattr(bench_main.signal, "signal", lambda *args: None)  # not pytest's SIGTERM handler
    monkeypatch.setattr(bench_main, "write_results", lambda results, out, full: written.append(results))
    monkeypatch.setattr(bench_main, "BENCHES", ())  # nothing to measure: the broker's start and the meta
    assert bench_main.main(["--quick", "--kafka-version", OLDEST, "--out", str(tmp_path)]) == 0
    meta = written[0]["meta"]
    assert fake_broker == [OLDEST]
    assert meta["kafka"] == OLDEST and meta["kafka_protocol"] == PROTOCOL
    assert meta["command"] == f"python -m bench --quick --kafka-version {OLDEST}"
    assert bench_main.main(["--quick", "--out", str(tmp_path)]) == 0
    assert fake_broker[-1] == written[-1]["meta"]["kafka"] == KAFKA_VERSION
    assert written[-1]["meta"]["command"].endswith(f" --kafka-version {KAFKA_VERSION}")


def test_the_reports_show_the_broker_version_and_its_protocol() -> None:
    from bench.report import markdown as bench_markdown
    from soak.report import markdown as soak_markdown
    from tests.unit.test_bench_report_writers import _results

    results = _results()
    results["meta"].update(kafka=OLDEST, kafka_protocol=PROTOCOL)
    results["targets"], results["analysis"] = [], {}
    assert f"One broker (Kafka {OLDEST}, {PROTOCOL}, KRaft" in bench_markdown(results)
    soak = {"seed": 1, "verdict": "PASS", "wall_s": 60, "phases": [],
            "schedule": build(1, records=2500, faults=2).to_dict(),
            "summary": {"passed": True, "faults": 0, "applied": 0, "hit_open_transaction": 0, "verdicts": {},
                        "control_duplicates": None, "by_kind": {}},
            "meta": {"command": "c", "started": "now", "git_commit": "abc", "machine": "m", "batch": 500,
                     "transaction_timeout_ms": 15000, "trigger": "1 second", "input_note": "n"}}
    assert "3 KRaft brokers (Kafka version not recorded: a run from before `--kafka-version`;" \
        in soak_markdown(soak, "stem")
    soak["meta"].update(kafka=OLDEST, kafka_protocol=PROTOCOL)
    assert f"3 KRaft brokers (Kafka {OLDEST}, {PROTOCOL}; replication 3" in soak_markdown(soak, "stem")
    json.dumps(soak)  # the meta stays JSON


@pytest.mark.parametrize("target", ["bench", "soak"])
def test_make_passes_kafka_version_to_both_and_refuses_a_bad_one_before_the_long_proofs(target: str) -> None:
    def make(*args: str) -> subprocess.CompletedProcess[str]:
        # -o: treat the prerequisites as made (no install, no long proofs); -n: print the recipe.
        return subprocess.run(["make", "-s", "-o", "install", "-o", "test-long", *args], cwd=REPO,
                              capture_output=True, text=True, timeout=60, check=False)

    planned = make("-n", target, f"KAFKA_VERSION={OLDEST}", "SOAK_ARGS=--faults 2", "BENCH_ARGS=--quick")
    assert f"-m {target} --kafka-version {OLDEST} " in planned.stdout
    assert f"-m {target}  " in make("-n", target).stdout  # no KAFKA_VERSION: the tool's default
    refused = make("kafka-version", "KAFKA_VERSION=3.8.1")
    assert refused.returncode != 0
    assert "KAFKA_VERSION: Kafka version '3.8.1' cannot run in the devstack" in refused.stderr
    assert ", ".join(KAFKA_VERSIONS) in refused.stderr
    assert make("kafka-version", f"KAFKA_VERSION={OLDEST}").returncode == 0
