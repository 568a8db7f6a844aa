"""Test-only fault injection: inert unless both variables are set; fires once at its point."""

from __future__ import annotations

import logging

import pytest

from tests.support.faults import driver as faults
from tests.support.faults.driver import ACK_VALUE, FaultInjector, FaultPoint
from tests.support.sleeps import record_sleeps_of_this_thread


@pytest.fixture
def no_kill(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    kills: list[tuple[int, int]] = []
    monkeypatch.setattr(faults.os, "kill", lambda pid, sig: kills.append((pid, sig)))
    record_sleeps_of_this_thread(monkeypatch, faults, lambda s: None)
    return kills


@pytest.mark.parametrize(
    "env",
    [{}, {"EOS_FAULT_INJECTION": "before_produce@2"}, {"EOS_FAULT_INJECTION_ACK": ACK_VALUE},
     {"EOS_FAULT_INJECTION": "before_produce@2", "EOS_FAULT_INJECTION_ACK": "yes"}],
)
def test_one_variable_alone_arms_nothing(monkeypatch, no_kill, env: dict[str, str]) -> None:
    monkeypatch.delenv("EOS_FAULT_INJECTION", raising=False)
    monkeypatch.delenv("EOS_FAULT_INJECTION_ACK", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    injector = FaultInjector.from_environment(60_000)
    assert type(injector) is FaultInjector
    for point in FaultPoint:
        injector.for_batch(2).hit(point)
    assert no_kill == []


def test_armed_fires_once_at_its_point_and_batch(monkeypatch, no_kill, tmp_path, caplog) -> None:
    report = tmp_path / "faults.txt"
    monkeypatch.setenv("EOS_FAULT_INJECTION", "after_produce@2")
    monkeypatch.setenv("EOS_FAULT_INJECTION_ACK", ACK_VALUE)
    monkeypatch.setenv("EOS_FAULT_REPORT", str(report))
    with caplog.at_level(logging.WARNING, logger=faults.__name__):
        injector = FaultInjector.from_environment(60_000)
        injector.for_batch(1).hit(FaultPoint.AFTER_PRODUCE)
        injector.for_batch(2).hit(FaultPoint.BEFORE_PRODUCE)
        assert no_kill == []
        injector.for_batch(2).hit(FaultPoint.AFTER_PRODUCE)
        injector.for_batch(2).hit(FaultPoint.AFTER_PRODUCE)
    assert len(no_kill) == 2  # the spark-submit parent and the driver, once
    assert "EOS-FAULT armed: after_produce at batch 2 (test only)" in caplog.text
    assert report.read_text() == "EOS-FAULT fired: after_produce batch 2, killing the driver\n"


def test_slow_transaction_stalls_past_the_timeout_instead_of_killing(monkeypatch, no_kill, tmp_path) -> None:
    stalls: list[float] = []
    record_sleeps_of_this_thread(monkeypatch, faults, stalls.append)
    monkeypatch.setenv("EOS_FAULT_INJECTION", "slow_transaction@0")
    monkeypatch.setenv("EOS_FAULT_INJECTION_ACK", ACK_VALUE)
    monkeypatch.setenv("EOS_FAULT_REPORT", str(tmp_path / "faults.txt"))
    FaultInjector.from_environment(6000).for_batch(0).hit(FaultPoint.SLOW_TRANSACTION)
    assert stalls == [14] and no_kill == []
    assert "EOS-FAULT fired: slow_transaction batch 0, stalling 14s" in (tmp_path / "faults.txt").read_text()
