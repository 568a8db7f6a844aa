"""Which ``kafka`` connection each role's tasks use: per role, shared, or none (the spec's settings)."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.acls import AclError
from airflow_provider_eos.role_connections import kafka_conn_id, role_conn_env


def test_a_role_s_own_connection_wins_over_the_shared_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EOS_KAFKA_CONN_ID", "kafka_all")
    monkeypatch.setenv("EOS_KAFKA_CONN_ID_RECOVERY", "kafka_recovery")
    assert kafka_conn_id("recovery") == "kafka_recovery"
    assert kafka_conn_id("job") == "kafka_all"
    assert role_conn_env("health") == "EOS_KAFKA_CONN_ID_HEALTH"


def test_no_connection_configured_means_the_spec_s_own_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EOS_KAFKA_CONN_ID", "EOS_KAFKA_CONN_ID_JOB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EOS_KAFKA_CONN_ID_HEALTH", "")
    assert kafka_conn_id("job") is None
    assert kafka_conn_id("health") is None


def test_an_unknown_role_is_refused_naming_the_roles() -> None:
    with pytest.raises(AclError, match="role 'admin' is unknown") as raised:
        kafka_conn_id("admin")  # type: ignore[arg-type]
    assert "job, recovery, health" in raised.value.fix
