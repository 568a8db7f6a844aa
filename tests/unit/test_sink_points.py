"""The sink's one extension point: named points, a plug-in loaded only when acknowledged, no test code in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.spark.sink_points import (
    ACK_VALUE,
    SinkObserver,
    SinkPlugin,
    TaskObserver,
    TaskPoint,
    UnknownModeError,
    load_plugin,
    run_mode,
)
from bench.noop_sink import NoopPlugin, NoopSink
from tests.support import faults
from tests.support.faults import tasks as task_faults
from tests.support.sleeps import record_sleeps_of_this_thread

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_provider_eos"
SPEC = PipelineSpec(name="orders", kafka={"bootstrap.servers": "localhost:9092"}, input_topics=["orders"],
                    output_topic="out", group_id="orders-sink", transactional_id_prefix="orders-txn",
                    checkpoint_location="/tmp/ckpt", transaction_timeout_ms=6000)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EOS_SINK_PLUGIN", "EOS_FAULT_INJECTION", "EOS_FAULT_INJECTION_ACK", "EOS_FAULT_REPORT"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("env", [{}, {"EOS_SINK_PLUGIN": "bench.noop_sink:plugin"},
                                 {"EOS_FAULT_INJECTION_ACK": ACK_VALUE},
                                 {"EOS_SINK_PLUGIN": "bench.noop_sink:plugin", "EOS_FAULT_INJECTION_ACK": "yes"}])
def test_no_plugin_is_loaded_without_its_name_and_the_acknowledgement(monkeypatch, env: dict[str, str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    plugin = load_plugin()
    assert type(plugin) is SinkPlugin and type(plugin.observer(SPEC)) is SinkObserver
    assert plugin.sink("noop", SPEC, None) is None  # type: ignore[arg-type]
    assert type(SinkObserver().for_tasks()) is TaskObserver and TaskObserver().jvm_plan() is None
    with pytest.raises(UnknownModeError, match="unknown mode 'noop'"):
        run_mode("noop")


def test_an_acknowledged_plugin_supplies_its_mode(monkeypatch) -> None:
    monkeypatch.setenv("EOS_SINK_PLUGIN", "bench.noop_sink:plugin")
    monkeypatch.setenv("EOS_FAULT_INJECTION_ACK", ACK_VALUE)
    plugin = load_plugin()
    assert isinstance(plugin, NoopPlugin)
    assert isinstance(plugin.sink("noop", SPEC, None), NoopSink)  # type: ignore[arg-type]
    assert run_mode("noop") == "noop" and run_mode("exactly-once") == "exactly-once"


def test_the_fault_plugin_arms_what_eos_fault_injection_names(monkeypatch, tmp_path) -> None:
    fired: list[float] = []
    monkeypatch.setattr(faults, "_pickle_tasks_by_value", lambda: None)  # no Spark task is shipped here
    record_sleeps_of_this_thread(monkeypatch, task_faults, fired.append)
    monkeypatch.setattr(task_faults.tempfile, "gettempdir", lambda: str(tmp_path))
    for name, value in faults.arming_env("task_stall@1:0", tmp_path / "faults.txt").items():
        monkeypatch.setenv(name, value)
    observer = load_plugin().observer(SPEC)
    tasks = observer.for_tasks()
    # task_stall fires where a task has produced, before its commit: not after a spill, nor after the commit.
    tasks.reached(TaskPoint.TASK_AFTER_SPILL, 1, 0)
    tasks.reached(TaskPoint.TASK_AFTER_COMMIT, 1, 0)
    assert fired == []
    tasks.reached(TaskPoint.TASK_AFTER_PRODUCE, 1, 0)
    assert fired == [20] and tasks.jvm_plan()["config"]["point"] == "task_stall"


def test_the_product_imports_no_test_or_bench_code() -> None:
    outside = re.compile(r"^\s*(from|import)\s+(tests|bench|soak)\b", re.MULTILINE)
    found = [str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py") if outside.search(path.read_text())]
    assert found == []
    assert not {"faults.py", "task_faults.py", "noop_sink.py"} & {p.name for p in (PACKAGE / "spark").iterdir()}
