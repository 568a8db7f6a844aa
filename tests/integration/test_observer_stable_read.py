"""An observer's stable read (the health probe) is capped: a commit a zombie holds pending is reported
within the observer's wait, not after the spec's whole transaction timeout (docs/design-notes.md, note 56).

Real broker: a lost executor writer's transaction (its producer registered a 10-minute timeout)
holds the sink group's offsets of one input partition pending; the spec's own timeout is 10 minutes
too, so a writer's read would wait 10.5 minutes for it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from airflow_provider_eos.core.transactions import stable_read
from airflow_provider_eos.kafka import health_probe
from airflow_provider_eos.kafka.group_offsets import GroupOffsetsError
from airflow_provider_eos.kafka.transaction_actions import fence
from tests.support.checkpointed_pipeline import LAST_COMMITTED, checkpointed_pipeline

pytestmark = pytest.mark.integration

OBSERVER_WAIT_MS = 3_000


def test_the_health_probe_reports_a_pending_commit_within_the_observers_wait(
        tmp_path: Path, bootstrap: str, topic_factory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stable_read, "OBSERVER_STABLE_WAIT_MS", OBSERVER_WAIT_MS)
    pipeline = checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="observer", trigger="1 second",
                                     transaction_timeout_ms=600_000)
    zombie = pipeline.open_partition_transaction(0, LAST_COMMITTED + 1, timeout_ms=600_000)
    outcome: dict[str, object] = {}

    def sample() -> None:
        started = time.monotonic()
        try:
            outcome["sample"] = health_probe.probe(pipeline.spec)
        except GroupOffsetsError as exc:
            outcome["error"] = exc
        outcome["waited_s"] = time.monotonic() - started

    sampler = threading.Thread(target=sample, daemon=True)
    try:
        sampler.start()
        sampler.join(60)
        assert not sampler.is_alive(), "the health probe still waits on the pending commit after 60 s"
    finally:
        fence(pipeline.spec, pipeline.spec.partition_transactional_id(pipeline.input_topic, 0))
        zombie.flush(0)
    error = outcome.get("error")
    assert isinstance(error, GroupOffsetsError), outcome
    assert f"{pipeline.input_topic}-0" in error.message and "an observer's wait" in error.message
    # The wait is never shorter than one request's timeout (the probe's 30 s), so the capped read gives up
    # after about 30 s: not after the 60 s an uncapped observer wait would take, nor the spec's 10.5 minutes.
    assert outcome["waited_s"] < 45, outcome
