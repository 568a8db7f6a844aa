"""SIGTERM's stop of a query that is behind: the next batch is refused at its start, before the sink runs."""

from __future__ import annotations

import threading

import pytest

from airflow_provider_eos.spark.job import STOP_BEFORE_BATCH, StopBeforeBatch, StopGate


def test_batches_pass_until_a_stop_is_requested_then_the_next_is_refused_untouched() -> None:
    seen: list[int] = []
    stop = threading.Event()
    gate = StopGate(lambda batch, batch_id: seen.append(batch_id), stop)
    gate(None, 4)
    stop.set()
    with pytest.raises(StopBeforeBatch) as refused:
        gate(None, 5)
    assert seen == [4], "the refused batch must not reach the sink"
    assert str(refused.value).startswith(f"{STOP_BEFORE_BATCH} 5:")
