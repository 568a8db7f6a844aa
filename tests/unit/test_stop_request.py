"""The driver's SIGTERM handler (spark/stop_request.py): installed first, a SIGTERM only asks for a stop."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator

import pytest

from airflow_provider_eos.spark.stop_request import STOPPED_WHILE_STARTING, stop_on_sigterm, stopped_while_starting


@pytest.fixture
def own_sigterm() -> Iterator[None]:
    """Put back pytest's SIGTERM handler after the test installed the driver's."""
    before = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, before)


def test_a_sigterm_sets_the_stop_instead_of_ending_the_process(own_sigterm: None) -> None:
    stop = stop_on_sigterm()
    assert not stop.is_set()
    os.kill(os.getpid(), signal.SIGTERM)  # Python's default action would end pytest here
    assert stop.wait(5)


def test_each_start_up_step_asks_the_stop_first(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    with caplog.at_level(logging.INFO, logger="airflow_provider_eos.job"):
        assert not stopped_while_starting(stop, "Spark started")
        stop.set()
        assert stopped_while_starting(stop, "the query started")
    assert [r.getMessage() for r in caplog.records] == [
        f"{STOPPED_WHILE_STARTING}, before the query started: no batch ran, nothing was written"]
