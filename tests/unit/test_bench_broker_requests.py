"""The bench's broker request counts (bench/broker_requests.py) and the report's lines on them and on the CPU bound."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from airflow_provider_eos.devstack.broker_config import free_port
from bench.broker_requests import BrokerRequests, _agent_port, median_per_batch, per_batch, served
from bench.cpu_pinning import describe, pin_broker
from bench.report_machine import cpu_bound_lines, cpu_lines, request_lines


def test_served_is_the_difference_per_type_and_leaves_out_types_without_requests() -> None:
    before = {"Produce": 10, "Fetch": 5, "Metadata": 2}
    after = {"Produce": 40, "Fetch": 5, "Metadata": 3, "EndTxn": 4}
    assert served(before, after) == {"EndTxn": 4, "Metadata": 1, "Produce": 30}
    assert served({"FetchConsumer": 2.5, "Produce": 1.0}, {"FetchConsumer": 502.5, "Produce": 1.0}) == {
        "FetchConsumer": 500.0}


def test_the_reader_is_asked_for_counts_or_for_the_time_requests_were_held(monkeypatch, tmp_path) -> None:
    asked: list[list[str]] = []

    def reader(command: list[str]) -> str:
        asked.append(command[4:])
        return "FetchConsumer\t512.5\nProduce\t3.0\n" if command[5:] else "FetchConsumer\t7\nProduce\t3\n"

    monkeypatch.setattr("bench.broker_requests._run", reader)
    requests = BrokerRequests(4321, tmp_path)
    assert requests.counts() == {"FetchConsumer": 7, "Produce": 3}
    assert requests.held_ms() == {"FetchConsumer": 512.5, "Produce": 3.0}
    assert asked == [["4321"], ["4321", "RemoteTimeMs"]]


def test_the_brokers_compilation_time_is_read_as_whole_milliseconds_or_none_when_the_reader_fails(
        monkeypatch, tmp_path) -> None:
    monkeypatch.setattr("bench.broker_requests._run",
                        lambda command: "compilation\t1630\n" if command[5:] == ["CompilationMs"] else "")
    assert BrokerRequests(4321, tmp_path).compilation_ms() == 1630

    def failing(command: list[str]) -> str:
        raise RuntimeError("java -cp failed (1): connection refused")

    monkeypatch.setattr("bench.broker_requests._run", failing)
    assert BrokerRequests(4321, tmp_path).compilation_ms_or_none() is None
    monkeypatch.setattr("bench.broker_requests._run", lambda command: "")  # an answer without the line
    assert BrokerRequests(4321, tmp_path).compilation_ms_or_none() is None


def test_per_batch_shows_the_known_types_sums_the_rest_and_the_transactions_share() -> None:
    requests = {"Produce": 40, "EndTxn": 8, "AddOffsetsToTxn": 8, "WriteTxnMarkers": 8, "ApiVersions": 6,
                "DescribeCluster": 2, "Fetch": 12, "FetchConsumer": 12}
    figures = per_batch(requests, 4)
    assert figures["Produce"] == 10.0 and figures["EndTxn"] == 2.0 and figures["Fetch"] == 3.0
    assert figures["other"] == 2.0  # ApiVersions + DescribeCluster; FetchConsumer counts the fetches again
    assert figures["transactional"] == 6.0  # EndTxn + AddOffsetsToTxn + WriteTxnMarkers
    assert figures["total"] == 21.0
    assert per_batch({"Produce": 3}, 0)["Produce"] == 3.0  # no batch: counted as one


def test_the_median_per_batch_is_per_type_over_the_runs_that_have_counts() -> None:
    runs = [{"broker_requests_per_batch": {"Produce": 10.0, "total": 20.0}},
            {"broker_requests_per_batch": {"Produce": 30.0, "total": 50.0, "EndTxn": 4.0}},
            {"broker_requests_per_batch": {"Produce": 20.0, "total": 40.0}}, {}]
    assert median_per_batch(runs) == {"EndTxn": 0.0, "Produce": 20.0, "total": 40.0}
    assert median_per_batch([{}, {"records": 1}]) == {}


def _run(rate: float, job_cpu: float, broker_cpu: float, requests: dict | None = None) -> dict:
    return {"after_first_batch_records_per_s": rate, "cpu_steady_us_per_record": job_cpu,
            "broker_cpu_steady_us_per_record": broker_cpu,
            **({"broker_requests_per_batch": requests} if requests else {})}


def _throughput(b_runs: list, c_runs: list) -> dict:
    modes = {"b@2": {"label": "(b) at-least-once", "runs": b_runs,
                     "broker_requests_per_batch": median_per_batch([r for r in b_runs if r])},
             "c_e@2": {"label": "(c_e) exactly-once", "runs": c_runs,
                       "broker_requests_per_batch": median_per_batch([r for r in c_runs if r])}}
    return {"cores": [2], "modes": modes}


def test_the_cpu_bound_line_pairs_each_repetitions_predicted_and_measured_ratio() -> None:
    b_runs = [_run(150_000, 9.0, 1.0), _run(140_000, 9.5, 1.1), None]
    c_runs = [_run(144_000, 9.2, 1.3), _run(140_000, 9.4, 1.2), _run(150_000, 9.0, 1.0)]
    lines = cpu_bound_lines(_throughput(b_runs, c_runs))
    line = next(text for text in lines if text.startswith("- c_e/b on local[2]"))
    # 10.0 / 10.5 = 0.95 predicted, 144 / 150 = 0.96 measured; 10.6 / 10.6 = 1.00 and 1.00; the failed run left out.
    assert line.endswith("0.95 / 0.96, 1.00 / 1.00.")
    assert not any("c_d/b" in text for text in lines)


def test_no_cpu_bound_line_without_the_brokers_cpu() -> None:
    b_runs = [_run(150_000, 9.0, 0.0)]
    c_runs = [_run(144_000, 9.2, 1.3)]
    assert cpu_bound_lines(_throughput(b_runs, c_runs)) == []


def test_the_request_table_has_a_column_per_type_seen_and_the_transactions_share() -> None:
    b = per_batch({"Produce": 250, "Fetch": 236, "ListOffsets": 4269}, 11)
    c = per_batch({"Produce": 380, "Fetch": 236, "ListOffsets": 4269, "EndTxn": 44, "AddOffsetsToTxn": 44,
                   "TxnOffsetCommit": 44, "WriteTxnMarkers": 44}, 11)
    lines = request_lines(_throughput([_run(1, 1, 1, b)], [_run(1, 1, 1, c)]))
    header = next(text for text in lines if text.startswith("| mode |"))
    assert header == ("| mode | Produce | Fetch | ListOffsets | AddOffsetsToTxn | TxnOffsetCommit | EndTxn | "
                      "WriteTxnMarkers | transactional | total |")
    rows = {text.split(" | ")[0]: text for text in lines if text.startswith("| (")}
    assert rows["| (b) at-least-once"] == "| (b) at-least-once | 22.7 | 21.5 | 388.1 | - | - | - | - | - | 432.3 |"
    assert rows["| (c_e) exactly-once"].endswith("| 34.5 | 21.5 | 388.1 | 4.0 | 4.0 | 4.0 | 4.0 | 16.0 | 460.1 |")
    assert request_lines({"cores": [2], "modes": {"b@2": {"label": "b", "runs": []}}}) == []


def test_an_agent_already_running_is_found_by_its_port_in_the_status() -> None:
    status = ("4856:\nAgent: enabled\n\nConnection Type: remote\nProperties     :\n"
              "  com.sun.management.jmxremote.rmi.port = 47123\n  com.sun.management.jmxremote.port = 47123\n")
    assert _agent_port(status) == 47123
    assert _agent_port("4856:\nAgent: disabled\n") is None



# A stand-in for the broker: a process with a few threads that sleep.
THREADS = ("import threading, time\n"
           "for _ in range(3):\n    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
           "time.sleep(30)\n")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_pinning_puts_every_broker_thread_on_its_core_and_this_process_on_the_others() -> None:
    cores = sorted(os.sched_getaffinity(0))
    broker = subprocess.Popen([sys.executable, "-c", THREADS])
    own = os.sched_getaffinity(0)
    try:
        time.sleep(0.5)
        facts = pin_broker(broker.pid, cores[-1])
        assert facts["broker_core"] == cores[-1] and facts["job_cores"] == cores[:-1]
        assert facts["broker_threads_pinned"] >= 4
        for task in os.listdir(f"/proc/{broker.pid}/task"):
            assert os.sched_getaffinity(int(task)) == {cores[-1]}
        assert os.sched_getaffinity(0) == set(cores[:-1])
        assert f"alone on core {cores[-1]}" in describe(facts) and describe(None) is None
    finally:
        os.sched_setaffinity(0, own)
        broker.kill()
        broker.wait()


def test_pinning_names_a_core_the_machine_does_not_have() -> None:
    with pytest.raises(ValueError, match="--broker-core 999"):
        pin_broker(os.getpid(), 999)


def test_the_cpu_table_shows_the_brokers_jit_per_run_and_each_warm_up_round() -> None:
    def mode(label: str, jit: list[int]) -> dict:
        return {"label": label, "runs": [], "cpu_us_per_record": {"median": 24.0},
                "cpu_steady_us_per_record": {"median": 7.5}, "broker_cpu_us_per_record": {"median": 1.0},
                "broker_cpu_steady_us_per_record": {"median": 0.8},
                "broker_jit_ms": {"n": len(jit), "min": min(jit), "median": sorted(jit)[len(jit) // 2],
                                  "max": max(jit), "values": jit}}

    tp = {"cores": [2], "modes": {"b@2": mode("(b) at-least-once", [194, 276, 1033]),
                                  "c_e@2": mode("(c_e) exactly-once", [282, 466, 1060])},
          "warm_up": [{"mode": "b@2", "round": 1, "broker_jit_ms": 1154},
                      {"mode": "c_e@2", "round": 1, "broker_jit_ms": 901},
                      {"mode": "b@2", "round": 2, "broker_jit_ms": 486},
                      {"mode": "c_e@2", "round": 2, "failed": "exit 1"}]}
    lines = cpu_lines(tp)
    assert next(text for text in lines if text.startswith("| mode |")).endswith(" broker JIT ms per run |")
    assert next(text for text in lines if text.startswith("| (c_e)")).endswith("| 1.0 / 0.8 | 282 / 466 / 1,060 |")
    assert lines[-1] == ("Warm-up rounds (not counted), the broker's JIT milliseconds per run: round 1: b@2 1,154, "
                         "c_e@2 901; round 2: b@2 486, c_e@2 failed.")
    for figures in tp["modes"].values():
        del figures["broker_jit_ms"]
    del tp["warm_up"]
    lines = cpu_lines(tp)  # results recorded before the figure existed: no column, no warm-up line
    assert not any("JIT" in text for text in lines)


def test_without_a_broker_or_its_agent_the_runs_go_on_without_counts(tmp_path) -> None:
    assert BrokerRequests.attach_or_none(None, tmp_path) is None
    # No agent listens on this port: reading fails, the run is recorded without the counts.
    assert BrokerRequests(free_port(), tmp_path).counts_or_none() is None
    assert BrokerRequests(free_port(), tmp_path).compilation_ms_or_none() is None
