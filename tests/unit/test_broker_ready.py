"""The devstack's readiness probe: a group read that does not answer yet means "not up yet", not a failed start."""

from __future__ import annotations

import concurrent.futures
import types
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from airflow_provider_eos.devstack.broker_ready import group_coordinator_ready


class _Admin:
    outcome: BaseException | None = None

    def __init__(self, config: dict[str, Any]) -> None:
        pass

    def describe_consumer_groups(self, groups: list[str]) -> dict[str, concurrent.futures.Future]:
        future: concurrent.futures.Future = concurrent.futures.Future()
        if self.outcome is None:
            future.set_result(object())
        else:
            future.set_exception(self.outcome)
        return {groups[0]: future}


@pytest.mark.parametrize(("outcome", "ready"), [
    (None, True),
    (KafkaException(KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS)), False),
    # What a three-node Kafka 3.9.2 cluster gave the soak: no answer within the probe's 10 s.
    (concurrent.futures.TimeoutError(), False),
])
def test_a_group_read_that_fails_or_times_out_is_not_ready_yet(monkeypatch: pytest.MonkeyPatch,
                                                               outcome: BaseException | None, ready: bool) -> None:
    from confluent_kafka import admin

    monkeypatch.setattr(_Admin, "outcome", outcome)
    monkeypatch.setattr(admin, "AdminClient", _Admin)
    info = types.SimpleNamespace(client_settings=lambda: {"bootstrap.servers": "127.0.0.1:1"})
    assert group_coordinator_ready(info) is ready
