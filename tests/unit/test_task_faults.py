"""Fault points inside the executor writers' tasks: inert unless armed, fire once across processes."""

from __future__ import annotations

import os
import signal

import pytest

from tests.support.faults import tasks as task_faults
from tests.support.faults.driver import ACK_VALUE, FaultInjector
from tests.support.faults.tasks import ANY_PARTITION, TaskFaultPoint, TaskFaults
from tests.support.sleeps import record_sleeps_of_this_thread


@pytest.fixture
def kills(monkeypatch: pytest.MonkeyPatch, tmp_path) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    monkeypatch.setattr(task_faults.os, "kill", lambda pid, sig: found.append((pid, sig)))
    record_sleeps_of_this_thread(monkeypatch, task_faults, lambda s: found.append((-1, int(s))))
    monkeypatch.setattr(task_faults.tempfile, "gettempdir", lambda: str(tmp_path))
    return found


def _arm(monkeypatch: pytest.MonkeyPatch, setting: str, ack: str = ACK_VALUE) -> None:
    monkeypatch.setenv("EOS_FAULT_INJECTION", setting)
    monkeypatch.setenv("EOS_FAULT_INJECTION_ACK", ack)


def test_without_the_acknowledgement_nothing_is_armed(monkeypatch, kills) -> None:
    _arm(monkeypatch, "task_after_produce@1:0", ack="yes")
    faults = TaskFaults.from_environment((11, 12))
    for point in TaskFaultPoint:
        faults.hit(point, 1, 0)
    assert kills == []


def test_a_task_point_fires_once_for_its_batch_and_partition(monkeypatch, kills, tmp_path) -> None:
    report = tmp_path / "faults.txt"
    monkeypatch.setenv("EOS_FAULT_REPORT", str(report))
    _arm(monkeypatch, "task_after_produce@2:1")
    faults = TaskFaults.from_environment((11, 12))
    faults.hit(TaskFaultPoint.TASK_AFTER_PRODUCE, 2, 0)
    faults.hit(TaskFaultPoint.TASK_AFTER_PRODUCE, 1, 1)
    faults.hit(TaskFaultPoint.TASK_AFTER_COMMIT, 2, 1)
    assert kills == []
    faults.hit(TaskFaultPoint.TASK_AFTER_PRODUCE, 2, 1)
    # A retried task in another worker (a second copy of the shipped faults) finds the claim and passes.
    TaskFaults.from_environment((11, 12)).hit(TaskFaultPoint.TASK_AFTER_PRODUCE, 2, 1)
    assert len(kills) == 1 and kills[0][1] == signal.SIGKILL
    assert "EOS-FAULT fired: task_after_produce batch 2 partition 1" in report.read_text()


def test_the_driver_writers_after_produce_kills_the_driver_from_the_first_task(monkeypatch, kills) -> None:
    _arm(monkeypatch, "after_produce@3")
    faults = TaskFaults.from_environment((11, 12))
    assert faults.partition == ANY_PARTITION
    faults.hit(TaskFaultPoint.KILL_DRIVER_BEFORE_COMMIT, 3, 5)
    faults.hit(TaskFaultPoint.KILL_DRIVER_BEFORE_COMMIT, 3, 6)
    # The driver's two processes, and the task's own worker with them (a driver host crash).
    assert kills == [(11, signal.SIGKILL), (12, signal.SIGKILL), (os.getpid(), signal.SIGKILL)]


def test_slow_transaction_stalls_past_the_transaction_timeout(monkeypatch, kills) -> None:
    _arm(monkeypatch, "slow_transaction@1")
    TaskFaults.from_environment((11,), transaction_timeout_ms=6000).hit(TaskFaultPoint.SLOW_TRANSACTION, 1, 0)
    assert kills == [(-1, 14)]


def test_a_task_setting_leaves_the_driver_injector_inert(monkeypatch) -> None:
    _arm(monkeypatch, "task_after_commit@1:0")
    assert type(FaultInjector.from_environment(60_000)) is FaultInjector
