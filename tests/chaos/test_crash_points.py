"""Crashes at each named point of the sink protocol, random SIGKILLs, a zombie driver, and the
at-least-once control that proves the duplicate check can see duplicates."""

from __future__ import annotations

import contextlib
import random
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from airflow_provider_eos.core.driver_lease import read_driver_lease
from airflow_provider_eos.usecases.liveness import lease_signs_of_life
from tests.chaos.test_recovery_verdicts import verify
from tests.integration.test_driver_writer_streamed import spill_files
from tests.support.pipeline import (
    PipelineHarness,
    assert_exactly_once,
    json_events,
    kill_group,
    output_ids,
    wait_for,
    writers_of,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]

FAULT_BATCH = 2


# CI: after_produce (the open transaction aborted) on the driver writer, after_kafka_commit (the replay
# skipped) on the default executor writer; on the executor writers the secured DAG test crashes
# after_produce, recovers and resumes. before_produce (nothing reached Kafka) takes the same replay path as
# after_produce without the aborted records. `make test-long` runs them all.
# "executors" is the default executor writer (the JVM's), "executors/python" the PySpark workers' one.
WRITERS = ("driver", "executors", "executors/python")


def _in_ci(point: str, writers: str) -> bool:
    return (point, writers) in {("after_produce", "driver"), ("after_kafka_commit", "executors")}


def _marks(point: str, writers: str) -> tuple[pytest.MarkDecorator, ...]:
    """The default writer's replay skip is also the smoke subset's exactly-once crash test (`make smoke`)."""
    if not _in_ci(point, writers):
        return (pytest.mark.long,)
    # The driver writer's crash is in the broker-version matrix (`make compat`), beside the JVM writer's.
    return (pytest.mark.smoke,) if writers == "executors" else (pytest.mark.compat,)


def python_driver(job: subprocess.Popen) -> psutil.Process:
    """The Python driver of a running ``eos run`` (the process that wrote ``$EOS_DRIVER_PID_FILE``)."""
    for child in psutil.Process(job.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if pid_file := child.environ().get("EOS_DRIVER_PID_FILE"):
                text = Path(pid_file).read_text().strip()
                if text.isdigit():
                    return psutil.Process(int(text))
    raise AssertionError(f"no Python driver found under {job.pid}")


def _harness(bootstrap, tmp_path, writers: str, **kwargs) -> PipelineHarness:
    return PipelineHarness(bootstrap, tmp_path, **writers_of(writers), **kwargs)


@pytest.mark.parametrize(("point", "writers"), [
    pytest.param(point, writers, id=f"{point}-{writers}", marks=_marks(point, writers))
    for point in ("before_produce", "after_produce", "after_kafka_commit") for writers in WRITERS])
def test_crash_at_named_point_then_restart_is_exactly_once(bootstrap, tmp_path, point, writers):
    """Under executor writers ``after_produce`` is the driver killed by a task with its transaction open.
    The driver writer's spill of the killed batch is left behind and removed by the replay."""
    harness = _harness(bootstrap, tmp_path, writers)
    records, valid_ids, malformed = json_events(2000, malformed_every=41)
    harness.produce_input(records, aborted_every=3)

    crashed = harness.run(fault=f"{point}@{FAULT_BATCH}")
    assert crashed.killed, f"expected a SIGKILL, got {crashed.returncode}\n{crashed.log[-2000:]}"
    assert f"EOS-FAULT fired: {point} batch {FAULT_BATCH}" in crashed.log
    assert FAULT_BATCH not in harness.checkpoint().commit_batches(), "Spark must not have committed the batch"
    if writers == "driver" and point != "before_produce":
        # The driver writer's spill of the killed batch is left behind (and removed by the replay, below).
        left = spill_files(harness.spec.checkpoint_location)
        assert left and all(p.parent.parent.name == str(FAULT_BATCH) for p in left), left
    if point == "after_kafka_commit":
        # What the on-call sees before the restart: Kafka one batch ahead of the checkpoint, safe.
        ahead = verify(harness)
        assert ahead.returncode == 0 and ahead.data["overall"] == "KAFKA_AHEAD_SAFE", ahead.stderr
        assert {r["marker_batch"] for r in ahead.data["rows"]} == {FAULT_BATCH}, ahead.data["rows"]
        assert ahead.data["last_committed"] == FAULT_BATCH - 1, ahead.data

    restarted = harness.run()
    assert restarted.returncode == 0, restarted.log[-3000:]
    assert_exactly_once(harness, valid_ids, malformed)
    assert spill_files(harness.spec.checkpoint_location) == []

    actions = {b["batch_id"]: b["action"] for b in restarted.batch_lines()}
    if point == "after_kafka_commit":
        # The batch was in Kafka already: the replay found marker N and produced nothing.
        assert actions[FAULT_BATCH] == "skip_replay", actions
        in_sync = verify(harness)
        assert in_sync.returncode == 0 and in_sync.data["overall"] == "IN_SYNC", in_sync.stderr
    else:
        assert actions[FAULT_BATCH] == "produce", actions
    if point == "after_produce":
        # The crashed attempt's records reached the log and were aborted by the restart's
        # init_transactions: visible to read_uncommitted only.
        uncommitted = output_ids(harness.output_values("read_uncommitted"))
        assert sum(uncommitted.values()) > len(valid_ids)
        assert max(uncommitted.values()) == 2


# CI: the default executor writer; the others are long proofs, and so is the soak's slow_transaction fault.
@pytest.mark.parametrize("writers", [pytest.param(w, marks=() if w == "executors" else pytest.mark.long)
                                     for w in WRITERS])
def test_batch_slower_than_transaction_timeout_is_aborted_and_replayed_once(bootstrap, tmp_path, writers):
    harness = _harness(bootstrap, tmp_path, writers, transaction_timeout_ms=6000)
    records, valid_ids, malformed = json_events(1500, malformed_every=29)
    harness.produce_input(records)

    slow = harness.run(fault=f"slow_transaction@{FAULT_BATCH}")
    assert slow.returncode != 0 and not slow.killed, slow.log[-3000:]
    assert f"EOS-FAULT fired: slow_transaction batch {FAULT_BATCH}" in slow.log
    assert f"batch {FAULT_BATCH} was not written" in slow.log, slow.log[-3000:]
    assert FAULT_BATCH not in harness.checkpoint().commit_batches()

    restarted = harness.run()
    assert restarted.returncode == 0, restarted.log[-3000:]
    assert_exactly_once(harness, valid_ids, malformed)
    # The broker's timeout abort left the slow attempt in the log, aborted.
    assert sum(output_ids(harness.output_values("read_uncommitted")).values()) > len(valid_ids)


@pytest.mark.long  # CI: the named crash points and the soak subset's driver kills
def test_random_sigkills_while_processing_50k_records(bootstrap, tmp_path):
    """The driver writer's; the executor writers' are in test_executor_crash_points (200,000 records)."""
    harness = PipelineHarness(bootstrap, tmp_path, partitions=4, max_offsets_per_trigger=1000, writers="driver")
    records, valid_ids, malformed = json_events(50_000, malformed_every=997)
    harness.produce_input(records, aborted_every=10, chunk=1000)
    rng = random.Random(20261122)
    kills = 0
    for _ in range(5):
        process, log_path = harness.start()
        # Kill once batches are flowing, at a random moment within the next few batches.
        started = wait_for(lambda p=log_path: "EOS-BATCH" in p.read_text(errors="replace"), 180, 0.2)
        time.sleep(rng.uniform(0.0, 5.0))
        if process.poll() is None:
            kill_group(process)
            kills += 1
        assert started or process.returncode is not None
    final = harness.run()
    assert final.returncode == 0, final.log[-3000:]
    assert kills >= 5, f"only {kills} kills landed while the job was processing"
    assert_exactly_once(harness, valid_ids, malformed)


def test_at_least_once_control_duplicates_after_crash(bootstrap, tmp_path):
    """The control: Spark's built-in writer, killed after writing a batch and before the commit log."""
    harness = PipelineHarness(bootstrap, tmp_path)
    records, valid_ids, _ = json_events(1500)
    harness.produce_input(records)

    crashed = harness.run(fault=f"after_produce@{FAULT_BATCH}", mode="at-least-once")
    assert crashed.killed, crashed.log[-2000:]
    restarted = harness.run(mode="at-least-once")
    assert restarted.returncode == 0, restarted.log[-3000:]
    produced = output_ids(harness.output_values())
    duplicates = sum(c - 1 for c in produced.values() if c > 1)
    assert set(produced) == set(valid_ids)
    replayed = next(p["rows_in"] for p in restarted.batch_lines("EOS-PROGRESS") if p["batch_id"] == FAULT_BATCH)
    assert replayed > 0
    assert duplicates == replayed, f"expected batch {FAULT_BATCH} ({replayed} records) written twice, got {duplicates}"


# CI: the default executor writer's zombie (its tasks' producers fenced by the successor's); the driver
# writer's (one producer) and the Python executor writer's are long proofs.
@pytest.mark.parametrize("writers", [pytest.param(w, marks=() if w == "executors" else pytest.mark.long)
                                     for w in WRITERS])
def test_zombie_driver_is_fenced_and_output_stays_exact(bootstrap, tmp_path, writers):
    harness = _harness(bootstrap, tmp_path, writers, transaction_timeout_ms=60_000)
    harness.with_overrides(driver_lease_ttl_s=10)  # the frozen zombie's lease expires 20 s after its last renewal
    records, valid_ids, malformed = json_events(1500, malformed_every=31)
    harness.produce_input(records)

    # Driver A stalls inside batch 1's open transaction (for the timeout plus 8 s); driver B starts meanwhile.
    zombie, zombie_log = harness.start(fault="slow_transaction@1")
    driver: psutil.Process | None = None
    try:
        faults = zombie_log.with_suffix(".faults")
        assert wait_for(lambda: faults.exists() and "slow_transaction batch 1" in faults.read_text(), 180)
        # A zombie: its Python driver frozen (a long pause, a frozen VM) stops renewing its lease. A driver
        # renewing it would refuse B (design note 75): B starts once the lease has expired.
        driver, held = python_driver(zombie), read_driver_lease(harness.checkpoint())
        assert held is not None and not held.released, held
        driver.suspend()
        assert wait_for(lambda: not lease_signs_of_life(harness.checkpoint()), 60), read_driver_lease(
            harness.checkpoint())
        # Driver B takes over the same spec: its init_transactions aborts A's transaction and fences A.
        successor = harness.run()
        assert successor.returncode == 0, successor.log[-3000:]
        driver.resume()
        assert zombie.wait(180) != 0
        # A's lease lapsed for good: once awake it wrote nothing over B's released lease.
        ended = read_driver_lease(harness.checkpoint())
        assert ended is not None and ended.released and ended.token != held.token, ended
    finally:
        if driver is not None:
            with contextlib.suppress(psutil.Error):
                driver.resume()
        kill_group(zombie)
    zombie_text = zombie_log.read_text(errors="replace")
    # Fenced by the broker (B's init_transactions, or the timeout's abort), or by itself: a driver that wakes
    # with its lease lapsed commits nothing (the driver writer checks it right before its commit).
    stopped = "fenced" in zombie_text.lower() or "EOS-LEASE lapsed" in zombie_text
    assert "batch 1 was not written" in zombie_text and stopped, zombie_text[-3000:]
    assert_exactly_once(harness, valid_ids, malformed)
