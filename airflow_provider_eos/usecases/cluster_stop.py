"""Stop a cluster-mode driver deliberately: kill its YARN application through the ResourceManager's REST API.

In YARN cluster deploy mode the driver is the application master, on a NodeManager: no signal of
an Airflow worker reaches it. What the submit task's kill does (the Spark provider PUTs
``{"state": "KILLED"}`` to ``/ws/v1/cluster/apps/<id>/state`` for the application it submitted),
``stop_stream`` does from any worker: it finds the run's application by its driver-token tag at the
ResourceManager address the submission recorded (the handle's ``manager_url``, the one the liveness
check asks: :mod:`airflow_provider_eos.usecases.driver_liveness`) and kills each live one. YARN
then stops the containers (SIGTERM, SIGKILL 250 ms later): an open transaction is aborted by
recovery and the batch replays once, as after any driver crash.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from airflow_provider_eos.core.cluster_records import live_yarn_apps, parse_yarn_apps
from airflow_provider_eos.core.driver import DriverHandle
from airflow_provider_eos.usecases.driver_liveness import HTTP_TIMEOUT_S, Fetch, http_get, yarn_apps_url

__all__ = ["YarnKill", "kill_yarn_application"]

#: ``put(url, document) -> HTTP status``; raises ``OSError`` when there is no answer (an HTTP error status is one).
Put = Callable[[str, dict[str, str]], int]


def _http_put(url: str, document: dict[str, str], *, redirects: int = 2) -> int:
    """PUT ``document`` as JSON; a 307/308 (a standby ResourceManager names the active one) is followed, PUT again."""
    request = urllib.request.Request(url, data=json.dumps(document).encode(), method="PUT",
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        # urllib follows redirects of GET only; a PUT's is an HTTPError carrying the new address.
        location = err.headers.get("Location") if err.code in (307, 308) else None
        if not location or redirects <= 0:
            raise
        return _http_put(urllib.parse.urljoin(url, location), document, redirects=redirects - 1)


@dataclass(frozen=True)
class YarnKill:
    """What a kill through the ResourceManager did.

    :param killed: the applications the ResourceManager accepted a kill for.
    :param problem: why the driver's application could not be killed (``None`` once one was), naming it.
    """

    killed: tuple[str, ...] = ()
    problem: str | None = None


def kill_yarn_application(handle: DriverHandle, *, fetch: Fetch = http_get, put: Put = _http_put) -> YarnKill:
    """Kill the live YARN applications tagged with the driver token of ``handle`` through its ResourceManager.

    :param fetch: reads a URL (tests pass their own); :param put: PUTs a JSON document to one.
    """
    if not handle.master.startswith("yarn") or handle.manager_url is None:
        return YarnKill(problem=f"the submission recorded no YARN ResourceManager (master {handle.master!r}) to kill "
                                f"the application tagged {handle.token} through")
    url = yarn_apps_url(handle)
    try:
        apps = parse_yarn_apps(fetch(url))
    except (OSError, ValueError) as err:  # URLError, HTTPError and timeouts are OSErrors
        return YarnKill(problem=f"the ResourceManager did not list the application tagged {handle.token} "
                                f"({url}: {type(err).__name__}: {err})")
    if isinstance(apps, str):
        return YarnKill(problem=f"{url}: {apps}")
    live = live_yarn_apps(handle, apps)
    if not live:
        return YarnKill(problem=f"the ResourceManager {handle.manager_url} lists no live application tagged "
                                f"{handle.token}")
    killed: list[str] = []
    refused: list[str] = []
    for app in live:
        state_url = f"{handle.manager_url}/ws/v1/cluster/apps/{app.id}/state"
        try:
            status = put(state_url, {"state": "KILLED"})
        except (OSError, ValueError) as err:  # an HTTP error status (403 without the right) is an HTTPError
            refused.append(f"{app.id} ({state_url}: {type(err).__name__}: {err})")
            continue
        if status in (200, 202):  # 202: accepted, the application is being killed
            killed.append(app.id)
        else:
            refused.append(f"{app.id} ({state_url}: HTTP {status})")
    problem = f"the ResourceManager did not kill application {', '.join(refused)}" if refused else None
    return YarnKill(killed=tuple(killed), problem=problem)
