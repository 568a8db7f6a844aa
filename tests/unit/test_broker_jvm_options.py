"""The devstack nodes' JVM command: more options from ``EOS_DEVSTACK_KAFKA_OPTS``, after the devstack's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.devstack.broker_nodes import JVM_OPTIONS_ENV, jvm_command


def test_without_the_variable_the_command_is_the_devstacks_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JVM_OPTIONS_ENV, raising=False)
    command = jvm_command("java", "512m", "cp", Path("/logs"))
    assert command[:3] == ["java", "-Xmx512m", "-Xms512m"]
    assert command[-2:] == ["-cp", "cp"]


def test_its_options_come_after_the_devstacks_so_they_win_and_before_the_class_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(JVM_OPTIONS_ENV, "-Xmx1g  -XX:TieredStopAtLevel=1 '-Dnote=two words'")
    command = jvm_command("java", "512m", "cp", Path("/logs"))
    assert command[-5:] == ["-Xmx1g", "-XX:TieredStopAtLevel=1", "-Dnote=two words", "-cp", "cp"]
    assert command.index("-Xmx512m") < command.index("-Xmx1g")


def test_a_value_that_does_not_split_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(JVM_OPTIONS_ENV, "-Dnote='unclosed")
    with pytest.raises(DevstackError, match=f"{JVM_OPTIONS_ENV}=.*is not a list of JVM options") as raised:
        jvm_command("java", "512m", "cp", Path("/logs"))
    assert "quote it as a shell would" in raised.value.fix
