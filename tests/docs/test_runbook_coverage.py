"""The on-call runbook names every verdict, health status and outcome the code can report.

A new value added to one of these enums fails here until the runbook says what it means and what
to run, so nothing reaches an on-call engineer undocumented.
"""

from __future__ import annotations

import typing
from enum import Enum
from pathlib import Path

import pytest

from airflow_provider_eos.core.driver import Liveness
from airflow_provider_eos.core.health import HealthStatus, LagStatus, WatchOutcome
from airflow_provider_eos.core.health.findings import Signal
from airflow_provider_eos.core.preflight import Severity
from airflow_provider_eos.core.verification import Verdict

RUNBOOK = Path(__file__).resolve().parents[2] / "docs" / "runbook.md"
ENUMS: tuple[type[Enum], ...] = (Verdict, HealthStatus, LagStatus, WatchOutcome, Liveness, Severity)
VALUES = [(enum.__name__, str(member.value)) for enum in ENUMS for member in enum]
VALUES += [("Signal", value) for value in typing.get_args(Signal)]


@pytest.mark.parametrize(("kind", "value"), VALUES, ids=[f"{kind}.{value}" for kind, value in VALUES])
def test_the_runbook_names_it(kind: str, value: str) -> None:
    assert f"`{value}`" in RUNBOOK.read_text(), (
        f"docs/runbook.md does not name {kind} `{value}`: say what it means and what to run"
    )


def test_every_verdict_has_its_own_section() -> None:
    text = RUNBOOK.read_text()
    missing = [verdict.value for verdict in Verdict if f"### `{verdict.value}`" not in text]
    assert not missing, f"docs/runbook.md has no section '### `VERDICT`' for {missing}"
