"""Gathering the evidence: the cluster manager asked at the handle's address, an unreachable one is no evidence."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver import DriverHandle, EvidenceSource, HostIdentity, Liveness, driver_token
from airflow_provider_eos.usecases.driver_liveness import manager_evidence, observe_driver_anywhere

NOW = dt.datetime.now(dt.UTC)
TOKEN = driver_token("orders", "eos_pipeline__orders", "manual__1")
ELSEWHERE = HostIdentity(host="another-worker")


def _handle(master: str, manager_url: str | None, deploy_mode: str = "client") -> DriverHandle:
    return DriverHandle(pipeline="orders", token=TOKEN, host="worker-1", master=master, deploy_mode=deploy_mode,
                        submitted_at=NOW - dt.timedelta(minutes=5), manager_url=manager_url)


def test_the_resourcemanager_is_asked_for_the_applications_tagged_with_the_token() -> None:
    asked: list[str] = []

    def fetch(url: str) -> bytes:
        asked.append(url)
        return json.dumps({"apps": {"app": [{"id": "application_1_1", "state": "RUNNING", "startedTime": 0,
                                             "applicationTags": TOKEN}]}}).encode()

    seen = manager_evidence(_handle("yarn", "http://rm:8088", "cluster"), fetch)
    assert asked == [f"http://rm:8088/ws/v1/cluster/apps?applicationTags={TOKEN}"]
    assert seen is not None and seen.says is Liveness.ALIVE, seen


def test_an_unreachable_manager_and_an_unknown_checkpoint_give_no_evidence_and_no_verdict(tmp_path: Path) -> None:
    def refused(url: str) -> bytes:
        raise ConnectionRefusedError(111, "Connection refused")

    handle = _handle("spark://m:7077", "http://m:8080")
    seen = observe_driver_anywhere(handle, CheckpointReader(str(tmp_path / "none")), here=ELSEWHERE, fetch=refused)
    assert seen.liveness is Liveness.UNKNOWN, seen.evidence
    assert {each.source for each in seen.sources} == {EvidenceSource.PROCESS_TABLE, EvidenceSource.LEASE,
                                                      EvidenceSource.STANDALONE_MASTER}
    assert "http://m:8080/json/: ConnectionRefusedError" in seen.evidence
    assert manager_evidence(_handle("local[2]", None), refused) is None  # nobody to ask
