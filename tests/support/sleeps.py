"""The test's own thread's sleeps, recorded instead of slept (unit tests of code that stalls on purpose)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import ModuleType

import pytest


def record_sleeps_of_this_thread(monkeypatch: pytest.MonkeyPatch, module: ModuleType,
                                 record: Callable[[float], object]) -> None:
    """Replace ``module.time.sleep``: this thread's calls go to ``record``, other threads still sleep.

    ``module.time`` is the ``time`` module itself, so a bare patch reaches every thread of the test
    worker (a Kafka client's, one an earlier test left): in one CI run such a thread's sleeps grew a
    recording list without bound and the test timed out printing it.
    """
    this_thread, real_sleep = threading.get_ident(), time.sleep

    def sleep(seconds: float) -> None:
        if threading.get_ident() == this_thread:
            record(seconds)
        else:
            real_sleep(seconds)

    monkeypatch.setattr(module.time, "sleep", sleep)
