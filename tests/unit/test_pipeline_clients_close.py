"""PipelineClients destroys its admin client in the owner's thread when closed (design note 83): never through the
garbage collector, which may run on a librdkafka thread and abort the process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_provider_eos.usecases.clients import PipelineClients
from tests.support.silent_admin import silent_spec


class RecordedAdmin:
    def __init__(self) -> None:
        self.exits: list[tuple[Any, ...]] = []

    def __exit__(self, *args: Any) -> None:
        self.exits.append(args)


def test_closing_destroys_the_admin_made_and_a_later_use_makes_a_new_one(tmp_path: Path) -> None:
    clients = PipelineClients(silent_spec(tmp_path))
    admin = RecordedAdmin()
    clients.__dict__["admin"] = admin  # as the cached property keeps the one it made
    with clients as entered:
        assert entered is clients
    assert admin.exits == [(None, None, None)], "destroyed once, as a context manager's exit does"
    assert "admin" not in clients.__dict__, "the next use makes a new client"
    clients.close()  # a second close has nothing to destroy
    assert admin.exits == [(None, None, None)]


def test_closing_clients_that_made_no_admin_makes_none(tmp_path: Path) -> None:
    clients = PipelineClients(silent_spec(tmp_path))
    clients.close()
    assert "admin" not in clients.__dict__
