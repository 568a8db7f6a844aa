"""Two ``eos run`` drivers that take one checkpoint's free lease at the same instant: exactly one runs.

Reading the lease and then writing it was no compare-and-set: two drivers that both read "free" both
wrote, and both ran on one checkpoint and one set of transactional ids (design note 79). Here: a
real broker, local Spark, two plain ``eos run`` streams of one pipeline started together and held
at their lease by the tests' gate (``tests/support/lease_gate``) until both drivers are there, so
they take it within a millisecond of each other, not seconds apart as their JVMs start.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from airflow_provider_eos.core.driver_lease import read_driver_lease
from tests.support.pipeline import REPO_ROOT, PipelineHarness, assert_exactly_once, json_events, kill_group, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.spark]

GATE_PATH = REPO_ROOT / "tests" / "support" / "lease_gate"


def test_of_two_eos_run_drivers_started_together_on_one_checkpoint_exactly_one_runs(
    bootstrap: str, tmp_path: Path
) -> None:
    harness = PipelineHarness(bootstrap, tmp_path, trigger="2 seconds", max_offsets_per_trigger=100,
                              writers="driver", transform=None, master="local[1]")
    records, valid, malformed = json_events(200)
    harness.produce_input(records)
    checkpoint = harness.checkpoint()
    gate = tmp_path / "lease-gate"
    gate.mkdir()
    env = {"EOS_TEST_LEASE_GATE": str(gate), "EOS_TEST_LEASE_GATE_PARTIES": "2",
           "PYTHONPATH": f"{GATE_PATH}:{REPO_ROOT}"}
    drivers = [harness.start(env_extra=env), harness.start(env_extra=env)]
    try:
        # One is refused at its lease (exit 2); the other runs on.
        assert wait_for(lambda: any(process.poll() is not None for process, _ in drivers), 300), \
            "neither driver ended: both run on one checkpoint"
        assert len(list(gate.iterdir())) == 2, "the drivers did not both reach the gate: no race was run"
        ended = [(process, log) for process, log in drivers if process.poll() is not None]
        running = [(process, log) for process, log in drivers if process.poll() is None]
        assert len(ended) == 1 and len(running) == 1, "both drivers ended"
        (loser, loser_log), (winner, winner_log) = ended[0], running[0]
        refusal = loser_log.read_text(errors="replace")
        assert loser.returncode == 2, f"the refused driver ended with {loser.returncode}:\n{refusal[-4000:]}"
        assert "another driver holds the pipeline's lease" in refusal, refusal[-4000:]
        drained = wait_for(lambda: winner.poll() is not None or (checkpoint.latest_committed_batch() or 0) >= 1, 240)
        assert drained and winner.poll() is None, winner_log.read_text(errors="replace")[-4000:]
        held = read_driver_lease(checkpoint)
        assert held is not None and not held.released, held
        assert held.token in refusal and f"pid {held.pid}" in refusal, (held, refusal[-4000:])
        assert held.token in winner_log.read_text(errors="replace"), "the lease is not the running driver's"
        assert not [p.name for p in checkpoint.fs.ls(checkpoint.path("eos"), detail=False) if ".claim." in p]
        winner.send_signal(signal.SIGTERM)
        assert winner.wait(120) == 0, winner_log.read_text(errors="replace")[-4000:]
    finally:
        for process, _ in drivers:
            kill_group(process)
    released = read_driver_lease(checkpoint)
    assert released is not None and released.token == held.token and released.released, released
    # What the winner left unread (it was stopped after its first batches) is drained by one more run.
    harness.with_overrides(trigger="available_now")
    drain, drain_log = harness.start()
    try:
        assert drain.wait(300) == 0, drain_log.read_text(errors="replace")[-4000:]
    finally:
        kill_group(drain)
    assert_exactly_once(harness, valid, malformed)
