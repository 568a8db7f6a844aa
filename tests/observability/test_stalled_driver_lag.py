"""A driver stuck between batches still exports a growing input lag and the age of its last commit.

Spark reports progress only when a batch finishes, so the lag and the last commit's time must not come
from it: ``EosPipelineLagging`` reads exactly these two series. The job runs on a real broker and Spark
with a 1 s trigger until it has caught up, and is killed; a second run starts on the same checkpoint,
and once its query has started its JVM is stopped (SIGSTOP: the driver's Python lives, no batch runs)
and input arrives. Its scrape shows that input as lag, and the checkpoint's newest commit as the last
commit (batch and time), neither of which a batch of this run told it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from airflow_provider_eos.devstack.broker_config import free_port
from tests.support.pipeline import PipelineHarness, json_events, kill_group, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    """The exporter's samples by name (empty while it does not answer)."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
    except OSError:
        return {}
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def _total(samples: dict, name: str) -> float | None:
    values = [value for _, value in samples.get(name, [])]
    return sum(values) if values else None


def test_a_stalled_driver_exports_the_growing_lag_and_the_checkpoints_last_commit(
    bootstrap: str, tmp_path: Path,
) -> None:
    port = free_port()
    harness = PipelineHarness(bootstrap, tmp_path, trigger="1 second", max_offsets_per_trigger=300)
    harness.with_overrides(metrics={"prometheus_port": port, "prometheus_host": "127.0.0.1"})
    harness.produce_input(json_events(400)[0])

    process, log_path = harness.start()
    try:
        caught_up = wait_for(lambda: _total(_scrape(port), "eos_input_rows_total") == 400
                             and _total(_scrape(port), "eos_input_lag_records") == 0, 150)
        assert caught_up, (_scrape(port), log_path.read_text(errors="replace")[-3000:])
    finally:
        kill_group(process)
    checkpoint = harness.checkpoint()
    last = checkpoint.latest_committed_batch()
    assert last is not None
    committed_at = checkpoint.commit_time(last).timestamp()

    process, log_path = harness.start()
    stopped: list[psutil.Process] = []
    try:
        assert wait_for(lambda: "EOS-QUERY started" in log_path.read_text(errors="replace"), 120), (
            log_path.read_text(errors="replace")[-3000:])
        stopped = [p for p in psutil.Process(process.pid).children(recursive=True) if p.name() == "java"]
        assert stopped, psutil.Process(process.pid).children(recursive=True)
        for jvm in stopped:
            os.kill(jvm.pid, signal.SIGSTOP)
        harness.produce_input(json_events(700, prefix="late")[0])

        # No batch can run: the lag is the driver's own reading of the input (every 10 s), in offsets: the
        # 700 records and the markers of the transactions that wrote them.
        assert wait_for(lambda: (_total(_scrape(port), "eos_input_lag_records") or 0) >= 700, 45), _scrape(port)
        samples = _scrape(port)
        assert _total(samples, "eos_input_lag_records") <= 720, samples["eos_input_lag_records"]
        assert {labels["partition"] for labels, _ in samples["eos_input_lag_records"]} == {"0", "1"}
        # The last commit is the checkpoint's newest, from before this driver started.
        assert _total(samples, "eos_last_committed_batch") == last
        assert _total(samples, "eos_last_commit_timestamp_seconds") == pytest.approx(committed_at, abs=1)
        assert time.time() - committed_at > 10
        assert _total(samples, "eos_batches_total") is None  # this run finished no batch
    finally:
        for jvm in stopped:
            with contextlib.suppress(psutil.NoSuchProcess, ProcessLookupError):
                os.kill(jvm.pid, signal.SIGCONT)
        kill_group(process)
