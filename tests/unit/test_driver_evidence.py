"""The pure judgements of driver liveness: the lease, the cluster managers' records, and their combination."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from airflow_provider_eos.core.cluster_records import (
    SETTLE,
    judge_standalone_master,
    judge_yarn_apps,
    manager_web_url,
    parse_standalone_master,
    parse_yarn_apps,
)
from airflow_provider_eos.core.driver import DriverHandle, Evidence, EvidenceSource, Liveness, driver_token
from airflow_provider_eos.core.driver_evidence import RULES, combine_evidence, holds
from airflow_provider_eos.core.driver_lease import (
    CLOCK_SKEW_MARGIN,
    DriverLease,
    judge_lease,
    parse_driver_lease,
    renewal_interval_s,
    self_fence_after_s,
)
from airflow_provider_eos.core.errors import CheckpointError

NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
TOKEN = driver_token("orders", "eos_pipeline__orders", "manual__1")
OTHER = driver_token("orders", "eos_pipeline__orders", "manual__2")
ALIVE, GONE, UNKNOWN = Liveness.ALIVE, Liveness.GONE, Liveness.UNKNOWN
PT, LEASE, SA, RM = (EvidenceSource.PROCESS_TABLE, EvidenceSource.LEASE, EvidenceSource.STANDALONE_MASTER,
                     EvidenceSource.YARN_RESOURCEMANAGER)


def _handle(master: str = "local[2]", deploy_mode: str = "client", **more: object) -> DriverHandle:
    return DriverHandle(pipeline="orders", token=TOKEN, host="worker-1", master=master, deploy_mode=deploy_mode,
                        submitted_at=NOW - dt.timedelta(minutes=10), **more)


def _lease(age_s: float, *, token: str = TOKEN, ttl_s: float = 30, released: bool = False,
           started_ago_s: float = 300) -> DriverLease:
    return DriverLease(token=token, host="worker-7", pid=42, started_at=NOW - dt.timedelta(seconds=started_ago_s),
                       renewed_at=NOW - dt.timedelta(seconds=age_s), ttl_s=ttl_s, sequence=9, released=released)


# -- the lease -----------------------------------------------------------------------------------

SKEW = CLOCK_SKEW_MARGIN.total_seconds()

LEASE_CASES = [
    # (name, lease, verdict)
    ("fresh lease of this driver", _lease(5), ALIVE),
    ("within ttl + skew", _lease(30 + SKEW - 1), ALIVE),
    ("expired by ttl + skew", _lease(30 + SKEW + 1), GONE),
    ("released at once", _lease(1, released=True), GONE),
    ("another driver's fresh lease: another driver holds the checkpoint", _lease(5, token=OTHER), ALIVE),
    ("another driver's expired lease says nothing of this one", _lease(300, token=OTHER), UNKNOWN),
    ("another driver's released lease says nothing of this one", _lease(1, token=OTHER, released=True), UNKNOWN),
    ("taken before the run could have started a driver", _lease(300, started_ago_s=3600), UNKNOWN),
    ("no lease", None, UNKNOWN),
]


@pytest.mark.parametrize(("name", "lease", "verdict"), LEASE_CASES, ids=[c[0] for c in LEASE_CASES])
def test_the_lease_rules(name: str, lease: DriverLease | None, verdict: Liveness) -> None:
    seen = judge_lease(_handle(), lease, observed_at=NOW)
    assert seen.source is LEASE and seen.says is verdict, seen.detail


def test_an_unreadable_lease_is_no_evidence_and_a_malformed_one_names_its_file() -> None:
    assert judge_lease(_handle(), None, observed_at=NOW, problem="PermissionError").says is UNKNOWN
    with pytest.raises(CheckpointError, match=r"eos/driver-lease\.json is not"):
        parse_driver_lease("/c/eos/driver-lease.json", '{"token": "x"}')
    lease = _lease(3)
    assert parse_driver_lease("f", lease.to_json()) == lease


def test_the_driver_fences_itself_before_any_observer_can_call_its_lease_expired() -> None:
    for ttl in (3, 6, 30, 300):
        assert renewal_interval_s(ttl) * 2 < self_fence_after_s(ttl) < ttl, ttl
        # The driver's last commit comes at most self_fence_after after its last stamp; the observer says
        # GONE only ttl + skew after it by its clock, so later than ttl by the true clock while the clocks
        # differ by less than the skew margin: at least a fifth of the ttl after the driver's last commit.
        assert ttl - self_fence_after_s(ttl) >= ttl / 5 - 1e-9


# -- the cluster managers' records -------------------------------------------------------------------

def _ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def _app(name: str, state: str, *, started_ago_s: float = 120, ended_ago_s: float | None = None) -> dict:
    start = NOW - dt.timedelta(seconds=started_ago_s)
    ended = NOW - dt.timedelta(seconds=ended_ago_s if ended_ago_s is not None else 0)
    return {"id": f"app-{name[-4:]}-{state}", "name": name, "state": state, "starttime": _ms(start),
            "duration": _ms(ended) - _ms(start), "cores": 2, "user": "eos"}


def _master(active: list[dict] = (), completed: list[dict] = ()) -> str:
    return json.dumps({"url": "spark://m:7077", "status": "ALIVE", "workers": [], "activeapps": list(active),
                       "completedapps": list(completed), "activedrivers": [], "completeddrivers": []})


SETTLED = (SETTLE + CLOCK_SKEW_MARGIN).total_seconds() + 1
STANDALONE_CASES = [
    ("running", _master(active=[_app(TOKEN, "RUNNING")]), ALIVE),
    ("waiting for executors", _master(active=[_app(TOKEN, "WAITING")]), ALIVE),
    ("finished and settled", _master(completed=[_app(TOKEN, "FINISHED", ended_ago_s=SETTLED)]), GONE),
    ("killed and settled", _master(completed=[_app(TOKEN, "KILLED", ended_ago_s=SETTLED)]), GONE),
    ("finished too recently", _master(completed=[_app(TOKEN, "FINISHED", ended_ago_s=2)]), UNKNOWN),
    ("an earlier attempt ended, a later one runs",
     _master(active=[_app(TOKEN, "RUNNING")], completed=[_app(TOKEN, "FAILED", ended_ago_s=SETTLED)]), ALIVE),
    ("only another run's application", _master(active=[_app(OTHER, "RUNNING")]), UNKNOWN),
    ("an application of the token from before the run", _master(
        completed=[_app(TOKEN, "FINISHED", started_ago_s=7200, ended_ago_s=SETTLED)]), UNKNOWN),
    ("nothing", _master(), UNKNOWN),
]


@pytest.mark.parametrize(("name", "document", "verdict"), STANDALONE_CASES, ids=[c[0] for c in STANDALONE_CASES])
def test_the_standalone_master_rules(name: str, document: str, verdict: Liveness) -> None:
    record = parse_standalone_master(document)
    assert not isinstance(record, str), record
    seen = judge_standalone_master(_handle("spark://m:7077", manager_url="http://m:8080"), record, observed_at=NOW)
    assert seen.source is SA and seen.says is verdict, seen.detail


def _yarn(state: str, *, tags: str = TOKEN, started_ago_s: float = 120, finished_ago_s: float | None = None) -> dict:
    finished = 0 if finished_ago_s is None else _ms(NOW - dt.timedelta(seconds=finished_ago_s))
    return {"id": f"application_1_{state}", "name": "eos-orders", "state": state, "finalStatus": "UNDEFINED",
            "startedTime": _ms(NOW - dt.timedelta(seconds=started_ago_s)), "finishedTime": finished,
            "applicationTags": tags}


def _apps(*apps: dict) -> str:
    return json.dumps({"apps": {"app": list(apps)} if apps else None})


YARN_CASES = [
    ("running", _apps(_yarn("RUNNING")), ALIVE),
    ("accepted, not yet running", _apps(_yarn("ACCEPTED")), ALIVE),
    ("killed and settled", _apps(_yarn("KILLED", finished_ago_s=SETTLED)), GONE),
    ("finished and settled, among other tags", _apps(_yarn("FINISHED", tags=f"team-a,{TOKEN}",
                                                            finished_ago_s=SETTLED)), GONE),
    ("killed too recently: the NodeManager may not have stopped the container", _apps(
        _yarn("KILLED", finished_ago_s=1)), UNKNOWN),
    ("a second application of the run still runs", _apps(_yarn("FAILED", finished_ago_s=SETTLED),
                                                         _yarn("RUNNING")), ALIVE),
    ("an application of another tag only", _apps(_yarn("RUNNING", tags=OTHER)), UNKNOWN),
    ("none (the ResourceManager answers null)", _apps(), UNKNOWN),
]


@pytest.mark.parametrize(("name", "document", "verdict"), YARN_CASES, ids=[c[0] for c in YARN_CASES])
def test_the_resourcemanager_rules(name: str, document: str, verdict: Liveness) -> None:
    apps = parse_yarn_apps(document)
    assert not isinstance(apps, str), apps
    seen = judge_yarn_apps(_handle("yarn", "cluster", manager_url="http://rm:8088"), apps, observed_at=NOW)
    assert seen.source is RM and seen.says is verdict, seen.detail


def test_an_unreachable_or_strange_manager_is_no_evidence() -> None:
    handle = _handle("yarn", "cluster", manager_url="http://rm:8088")
    assert judge_yarn_apps(handle, None, observed_at=NOW, problem="timed out").says is UNKNOWN
    assert isinstance(parse_yarn_apps("<html>login</html>"), str)
    assert isinstance(parse_standalone_master('{"activeapps": 3}'), str)
    assert judge_standalone_master(handle, None, observed_at=NOW, problem="refused").says is UNKNOWN


def test_where_the_managers_keep_their_records() -> None:
    assert manager_web_url("spark://m1:7077,m2:7077") == "http://m1:8080"
    assert manager_web_url("spark://m:7077", standalone_webui="http://m:18080/") == "http://m:18080"
    assert manager_web_url("yarn", resourcemanager="rm:8088") == "http://rm:8088"
    assert manager_web_url("yarn") is None and manager_web_url("local[2]") is None


# -- combining -------------------------------------------------------------------------------------

def _said(source: EvidenceSource, says: Liveness) -> Evidence:
    return Evidence(source=source, says=says, detail=f"{source.value} said {says.value}")


LOCAL, STANDALONE = _handle(), _handle("spark://m:7077")
YARN_CLIENT, YARN_CLUSTER = _handle("yarn", "client"), _handle("yarn", "cluster")
COMBINE_CASES = [
    # (name, handle, what each source said, verdict)
    ("any alive wins over every gone", LOCAL, [(PT, GONE), (LEASE, ALIVE)], ALIVE),
    ("the process table alone (same host)", LOCAL, [(PT, GONE), (LEASE, UNKNOWN)], GONE),
    ("the lease alone (another worker)", LOCAL, [(PT, UNKNOWN), (LEASE, GONE)], GONE),
    ("nobody knows", LOCAL, [(PT, UNKNOWN), (LEASE, UNKNOWN)], UNKNOWN),
    ("the master on standalone client mode", STANDALONE, [(PT, UNKNOWN), (LEASE, UNKNOWN), (SA, GONE)], GONE),
    ("the master alive outweighs an expired lease", STANDALONE, [(PT, UNKNOWN), (LEASE, GONE), (SA, ALIVE)], ALIVE),
    ("the ResourceManager in cluster mode", YARN_CLUSTER, [(PT, UNKNOWN), (LEASE, UNKNOWN), (RM, GONE)], GONE),
    ("the ResourceManager in client mode", YARN_CLIENT, [(PT, UNKNOWN), (LEASE, UNKNOWN), (RM, GONE)], GONE),
    ("a process table's gone does not hold in cluster mode", YARN_CLUSTER, [(PT, GONE), (LEASE, UNKNOWN)], UNKNOWN),
    ("a standalone master's gone does not hold for a YARN driver", YARN_CLUSTER, [(SA, GONE)], UNKNOWN),
    ("a ResourceManager's gone does not hold for a standalone driver", STANDALONE, [(RM, GONE)], UNKNOWN),
    ("no source asked", LOCAL, [], UNKNOWN),
]


@pytest.mark.parametrize(("name", "handle", "said", "verdict"), COMBINE_CASES, ids=[c[0] for c in COMBINE_CASES])
def test_the_combining_rules(name: str, handle: DriverHandle, said: list, verdict: Liveness) -> None:
    seen = combine_evidence(handle, [_said(source, says) for source, says in said])
    assert seen.liveness is verdict, seen.evidence
    for source, _ in said:  # the sentence names every source and what it said
        assert f"{source.value}: " in seen.evidence


def test_the_rules_are_named_and_end_in_no_evidence() -> None:
    assert [name for name, _, _ in RULES] == ["alive", "gone", "no evidence"]
    assert RULES[-1][2] is UNKNOWN
    assert holds(LEASE, YARN_CLUSTER) and holds(LEASE, LOCAL) and not holds(PT, YARN_CLUSTER)
    seen = combine_evidence(YARN_CLUSTER, [_said(PT, GONE)])
    assert "does not count for yarn cluster mode" in seen.evidence and seen.sources[0].source is PT
