"""Airflow 3's public REST API (``/api/v2``) as the deployment tests use it: trigger, wait, read.

Everything goes through the api-server as a person's script would: a token from ``/auth/token``
(the simple auth manager's admin), then JSON over HTTP. Nothing here imports task code.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote

import httpx

from airflow_provider_eos.devstack.airflow_settings import SERIALIZED_DAG_WINDOW_S

TERMINAL_RUN = frozenset({"success", "failed"})
TERMINAL_TASK = frozenset({"success", "failed", "skipped", "upstream_failed", "removed"})
#: How often a wait for a parse asks the dag-processor again (each parse of a DAG file costs it about a second).
REPARSE_EVERY_S = 5.0


class AirflowApi:
    """A logged-in client of one deployment; ``with AirflowApi(url, user, password) as api: ...``."""

    def __init__(self, url: str, user: str, password: str, timeout_s: float = 30) -> None:
        self.url = url.rstrip("/")
        self._client = httpx.Client(base_url=self.url, timeout=timeout_s)
        token = self._client.post("/auth/token", json={"username": user, "password": password})
        token.raise_for_status()
        self._client.headers["Authorization"] = f"Bearer {token.json()['access_token']}"

    def __enter__(self) -> AirflowApi:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    # -- plumbing --------------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        answer = self._client.request(method, f"/api/v2{path}", **kwargs)
        if answer.is_error:
            raise AssertionError(f"{method} {path} -> {answer.status_code}: {answer.text[:2000]}")
        return answer.json() if answer.content else None

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params or None)

    # -- DAGs ------------------------------------------------------------------------------

    def dag_details(self, dag_id: str) -> dict[str, Any]:
        return self.get(f"/dags/{dag_id}/details")

    def reparse(self, dag_id: str) -> None:
        """Ask the dag-processor to parse the DAG's file now (e.g. after a spec file was added).

        A request still pending is no failure: Airflow stores one row per file (its key is the file's), and a second
        PUT before the dag-processor took the first fails on that key, as a 409 or, through SQLite, a 500 "Database
        error" (a CI run under load met it). The callers wait for the parse itself."""
        path = f"/parseDagFile/{self.dag_details(dag_id)['file_token']}"
        answer = self._client.request("PUT", f"/api/v2{path}")
        if answer.status_code == 409 or (answer.status_code == 500 and "Database error" in answer.text):
            return
        if answer.is_error:
            raise AssertionError(f"PUT {path} -> {answer.status_code}: {answer.text[:2000]}")

    def wait_for_dag(self, dag_id: str, timeout_s: float = 120) -> None:
        """Wait until the deployment lists ``dag_id`` (a new pipeline's spec gave its DAG), active and unpaused."""
        deadline = time.monotonic() + timeout_s
        found: dict[str, Any] = {}
        while time.monotonic() < deadline:
            answer = self._client.get(f"/api/v2/dags/{dag_id}")
            found = answer.json() if answer.status_code == 200 else {}
            if found and not found.get("is_paused") and not found.get("is_stale"):
                return
            time.sleep(1)
        raise AssertionError(f"{dag_id} was never listed, active and unpaused: {found}")

    def wait_for_param_choice(self, dag_id: str, param: str, value: str, timeout_s: float = 120) -> None:
        """Wait until the DAG's form offers ``value`` for ``param`` (a new pipeline's spec was parsed)."""
        def offered(details: dict[str, Any]) -> bool:
            schema = (details.get("params") or {}).get(param) or {}
            return value in ((schema.get("schema") or {}).get("enum") or [])
        self._wait_for_parse(dag_id, offered, f"param {param} offering {value!r}", timeout_s)

    def wait_for_doc_mention(self, dag_id: str, text: str, timeout_s: float = 120) -> None:
        """Wait until the DAG's docs mention ``text`` (the health check lists the pipelines it checks)."""
        self._wait_for_parse(dag_id, lambda details: text in (details.get("doc_md") or ""),
                             f"docs mentioning {text!r}", timeout_s)

    def _wait_for_parse(self, dag_id: str, parsed: Callable[[dict[str, Any]], bool], what: str,
                        timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        asked = 0.0
        while time.monotonic() < deadline:
            # Asked again while it is not there: a parse that began before the spec arrived wrote the DAG
            # moments ago, and Airflow skips a write that soon after the last ([core]
            # min_serialized_dag_update_interval), so the parse asked for first may change nothing.
            if time.monotonic() - asked >= REPARSE_EVERY_S:
                self.reparse(dag_id)
                asked = time.monotonic()
            if parsed(self.dag_details(dag_id)):
                # A version no run has used yet is rewritten in place, and the scheduler serves the copy it
                # checked within the last window unchecked: a run created now could be scheduled from the
                # content before this parse.
                time.sleep(SERIALIZED_DAG_WINDOW_S + 0.5)
                return
            time.sleep(0.5)
        raise AssertionError(f"{dag_id} was never parsed with {what}")

    def pipelines_view_rows(self) -> list[dict[str, Any]]:
        """The "Exactly-once pipelines" view's rows as its JSON serves them (``/eos/api/pipelines``)."""
        answer = self._client.get("/eos/api/pipelines")
        answer.raise_for_status()
        return answer.json()

    # -- runs ------------------------------------------------------------------------------

    def trigger(self, dag_id: str, conf: dict[str, Any], run_id: str | None = None) -> str:
        run_id = run_id or f"test__{uuid.uuid4().hex[:12]}"
        self.request("POST", f"/dags/{dag_id}/dagRuns",
                     json={"dag_run_id": run_id, "conf": conf, "logical_date": None})
        return run_id

    def run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return self.get(f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}")

    def wait_for_run(self, dag_id: str, run_id: str, timeout_s: float = 600,
                     states: Iterable[str] = TERMINAL_RUN) -> str:
        wanted = set(states)
        deadline = time.monotonic() + timeout_s
        state = None
        while time.monotonic() < deadline:
            state = self.run(dag_id, run_id)["state"]
            if state in wanted:
                return state
            time.sleep(2)
        raise AssertionError(f"{dag_id} run {run_id} still {state} after {timeout_s}s; tasks: "
                             f"{self.task_states(dag_id, run_id)}")

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        return self.get(f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances",
                        limit=100)["task_instances"]

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        return {ti["task_id"]: ti["state"] for ti in self.task_instances(dag_id, run_id)}

    def task_instance(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        return self.get(f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}")

    def wait_for_task(self, dag_id: str, run_id: str, task_id: str, states: Iterable[str],
                      timeout_s: float = 300) -> str:
        wanted = set(states)
        deadline = time.monotonic() + timeout_s
        state = None
        while time.monotonic() < deadline:
            state = self.task_instance(dag_id, run_id, task_id)["state"]
            if state in wanted:
                return state
            if state in TERMINAL_TASK:
                raise AssertionError(f"{task_id} ended {state}, waiting for {sorted(wanted)}; "
                                     f"log:\n{self.task_log(dag_id, run_id, task_id)[-4000:]}")
            time.sleep(1)
        raise AssertionError(f"{task_id} still {state} after {timeout_s}s, waiting for {sorted(wanted)}")

    def set_task_state(self, dag_id: str, run_id: str, task_id: str, state: str) -> None:
        """What "Mark as failed/success" in the UI sends."""
        self.request("PATCH", f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}",
                     json={"new_state": state})

    def clear_task(self, dag_id: str, run_id: str, task_id: str) -> None:
        """What "Clear" on one task instance in the UI sends."""
        self.request("POST", f"/dags/{dag_id}/clearTaskInstances",
                     json={"dry_run": False, "dag_run_id": run_id, "task_ids": [task_id],
                           "only_failed": False, "reset_dag_runs": True})

    # -- results ---------------------------------------------------------------------------

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value", map_index: int = -1) -> Any:
        entry = self.get(f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}"
                         f"/xcomEntries/{key}", deserialize=True, stringify=False, map_index=map_index)
        return entry["value"]

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int | None = None,
                 map_index: int = -1) -> str:
        number = try_number or (self.task_instance(dag_id, run_id, task_id)["try_number"] if map_index < 0 else 0) or 1
        answer = self.get(f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}"
                          f"/logs/{number}", full_content=True, map_index=map_index)
        content = answer.get("content") if isinstance(answer, dict) else answer
        if isinstance(content, list):
            return "\n".join(_log_line(part) for part in content)
        return str(content)

    def rendered_fields(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        return self.task_instance(dag_id, run_id, task_id).get("rendered_fields") or {}


def _log_line(part: Any) -> str:
    """One structured log record as the UI shows it: the event, then an exception's type and message."""
    if not isinstance(part, dict):
        return str(part)
    lines = [str(part.get("event", ""))]
    for error in part.get("error_detail") or []:
        if isinstance(error, dict):
            lines.append(f"{error.get('exc_type', '')}: {error.get('exc_value', '')}")
    return "\n".join(lines)
