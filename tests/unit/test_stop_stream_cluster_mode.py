"""stop_stream in YARN cluster deploy mode kills the run's application through the ResourceManager's REST API.

The real operator against a ResourceManager stand-in on 127.0.0.1 that answers the two REST calls
as YARN does (the applications tagged with the driver token; a PUT of ``{"state": "KILLED"}``), and
a driver lease in a local checkpoint that is renewed until the application is killed. The real
YARN case is tests/yarn/test_yarn_pipeline.py.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver import DriverHandle, driver_token
from airflow_provider_eos.core.driver_lease import DriverLease, write_driver_lease
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.spark.driver_processes import this_host_identity
from airflow_provider_eos.usecases.cluster_stop import kill_yarn_application
from tests.support.task_instances import SubmittedDriverTI

pytestmark = pytest.mark.airflow

RUN_ID = "manual__cluster_stop"
TOKEN = driver_token("orders", "eos_pipeline__orders", RUN_ID)
APP_ID = "application_1_0001"


def _ms(at: dt.datetime) -> int:
    return int(at.timestamp() * 1000)


class ResourceManager:
    """The two REST calls of YARN's ResourceManager that stop_stream makes, over one application of the token."""

    def __init__(self, *, kill_status: int = 202) -> None:
        self.kill_status = kill_status
        self.app: dict[str, Any] = {"id": APP_ID, "name": "eos-orders", "state": "RUNNING",
                                    "finalStatus": "UNDEFINED", "applicationTags": f"{TOKEN},team-a",
                                    "startedTime": _ms(dt.datetime.now(dt.UTC)), "finishedTime": 0}
        self.puts: list[tuple[str, dict]] = []
        self.killed = threading.Event()
        rm = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, status: int, document: object) -> None:
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                tagged = f"applicationTags={TOKEN}" in self.path
                self._answer(200, {"apps": {"app": [rm.app]} if tagged else None})

            def do_PUT(self) -> None:
                document = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                rm.puts.append((self.path, document))
                if rm.kill_status == 202:
                    # Ended a while ago, as the ResourceManager's record of it settles (cluster_records.SETTLE).
                    rm.app.update(state="KILLED", finalStatus="KILLED",
                                  finishedTime=_ms(dt.datetime.now(dt.UTC) - dt.timedelta(seconds=30)))
                    rm.killed.set()
                self._answer(rm.kill_status, {"state": "RUNNING"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def resourcemanager() -> Iterator[ResourceManager]:
    rm = ResourceManager()
    yield rm
    rm.server.shutdown()


def _handle(manager_url: str | None) -> DriverHandle:
    # Submitted from THIS worker, YARN cluster deploy mode, the ResourceManager's address recorded.
    return DriverHandle(pipeline="orders", token=TOKEN, master="yarn", deploy_mode="cluster",
                        submitted_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5), manager_url=manager_url,
                        **this_host_identity().model_dump())


def _renewing_driver(checkpoint: CheckpointReader, until: threading.Event) -> None:
    """The application master's lease keeper: renews every 0.5 s (ttl 1 s) until its application is killed."""
    def keep() -> None:
        sequence = 1
        while not until.wait(0.5):
            now = dt.datetime.now(dt.UTC)
            write_driver_lease(checkpoint, DriverLease(token=TOKEN, host="nm-1", pid=77, app_id=APP_ID, ttl_s=1,
                                                       started_at=now - dt.timedelta(minutes=4), renewed_at=now,
                                                       sequence=sequence))
            sequence += 1

    threading.Thread(target=keep, daemon=True).start()
    time.sleep(1)  # its first renewals are in


def _stop_stream(tmp_path: Path, handle: DriverHandle) -> tuple[Any, dict, CheckpointReader]:
    from airflow_provider_eos.operators.driver import StopPipelineDriverOperator

    spec = PipelineSpec(name="orders", kafka={"bootstrap.servers": "b:9092"}, input_topics=["in"], output_topic="out",
                        group_id="g", transactional_id_prefix="orders", checkpoint_location=str(tmp_path / "ckpt"),
                        trigger="10 seconds", driver_lease_ttl_s=3)
    (tmp_path / "orders.yaml").write_text(yaml.safe_dump(spec.to_dict()))
    operator = StopPipelineDriverOperator(task_id="stop_stream", spec_path=str(tmp_path / "orders.yaml"),
                                          submit_task_ids=["submit_stream"], grace_period_s=30)
    return operator, {"ti": SubmittedDriverTI(handle), "run_id": RUN_ID}, CheckpointReader(spec.checkpoint_location)


def test_stop_stream_kills_the_yarn_application_by_its_tag_then_finds_the_driver_gone(
        tmp_path: Path, resourcemanager: ResourceManager) -> None:
    operator, context, checkpoint = _stop_stream(tmp_path, _handle(resourcemanager.url))
    _renewing_driver(checkpoint, resourcemanager.killed)

    seen = operator.execute(context)

    assert resourcemanager.puts == [(f"/ws/v1/cluster/apps/{APP_ID}/state", {"state": "KILLED"})]
    assert seen["liveness"] == "GONE", seen["evidence"]
    assert f"{APP_ID} KILLED/KILLED" in seen["evidence"], seen["evidence"]


def test_stop_stream_names_the_application_when_the_resourcemanager_refuses_the_kill(
        tmp_path: Path, resourcemanager: ResourceManager) -> None:
    from airflow.providers.common.compat.sdk import AirflowFailException

    resourcemanager.kill_status = 403  # a user without the right to kill the application (its ACL)
    operator, context, checkpoint = _stop_stream(tmp_path, _handle(resourcemanager.url))
    _renewing_driver(checkpoint, resourcemanager.killed)
    try:
        with pytest.raises(AirflowFailException) as failed:
            operator.execute(context)
    finally:
        resourcemanager.killed.set()  # the stand-in's driver stops renewing
    message = str(failed.value)
    assert f"the ResourceManager did not kill application {APP_ID}" in message, message
    assert "HTTP Error 403" in message and "runs on" not in message, message
    assert "the lease was renewed while this host waited" in message, message


def test_the_kill_asks_only_for_live_applications_of_the_token_and_says_why_it_could_not() -> None:
    url = "http://rm:8088"
    listed: list[str] = []
    puts: list[str] = []

    def fetch(apps: list[dict]) -> Any:
        return lambda asked: listed.append(asked) or json.dumps({"apps": {"app": apps} if apps else None}).encode()

    def app(app_id: str, state: str, tags: str = TOKEN) -> dict:
        return {"id": app_id, "state": state, "applicationTags": tags}

    kill = kill_yarn_application(_handle(url), fetch=fetch([app("a_1", "RUNNING"), app("a_0", "KILLED"),
                                                            app("b_1", "RUNNING", tags="another-token")]),
                                 put=lambda asked, document: puts.append(asked) or 202)
    assert kill.killed == ("a_1",) and kill.problem is None
    assert puts == [f"{url}/ws/v1/cluster/apps/a_1/state"]
    assert listed == [f"{url}/ws/v1/cluster/apps?applicationTags={TOKEN}"]

    nothing_live = kill_yarn_application(_handle(url), fetch=fetch([app("a_0", "FINISHED")]), put=lambda *_: 202)
    assert not nothing_live.killed and f"no live application tagged {TOKEN}" in str(nothing_live.problem)

    def unreachable(asked: str) -> bytes:
        raise OSError("connection refused")

    away = kill_yarn_application(_handle(url), fetch=unreachable, put=lambda *_: 202)
    assert f"did not list the application tagged {TOKEN}" in str(away.problem) and "connection refused" in away.problem
    no_rm = kill_yarn_application(_handle(None))
    assert not no_rm.killed and "recorded no YARN ResourceManager" in str(no_rm.problem)


def test_a_kill_sent_to_a_standby_resourcemanager_follows_its_redirect_to_the_active_one(
        resourcemanager: ResourceManager) -> None:
    from airflow_provider_eos.usecases.cluster_stop import _http_put

    active = resourcemanager.url

    class Standby(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_PUT(self) -> None:
            self.send_response(307)
            self.send_header("Location", f"{active}{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()

    standby = ThreadingHTTPServer(("127.0.0.1", 0), Standby)
    threading.Thread(target=standby.serve_forever, daemon=True).start()
    try:
        state_url = f"http://127.0.0.1:{standby.server_address[1]}/ws/v1/cluster/apps/{APP_ID}/state"
        assert _http_put(state_url, {"state": "KILLED"}) == 202
    finally:
        standby.shutdown()
    assert resourcemanager.puts == [(f"/ws/v1/cluster/apps/{APP_ID}/state", {"state": "KILLED"})]
