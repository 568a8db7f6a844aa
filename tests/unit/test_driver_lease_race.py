"""Two drivers that start together on one checkpoint: exactly one takes the free lease (design note 79).

Reading the lease and then writing it is no compare-and-set: two takers that both read "free" both
wrote, and both ran on one checkpoint and one set of transactional ids. A free lease is now claimed
first with a create that only one of two can win. Here on a real local filesystem, two keepers
released together by a barrier, many rounds over each state a free lease is found in; and the
claims a crashed taker leaves behind, which must never wedge the pipeline.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver_lease import DriverLease, read_driver_lease, write_driver_lease
from airflow_provider_eos.core.errors import DriverLeaseHeldError
from airflow_provider_eos.core.lease_claim import claim_name, create_lease_claim, lease_base, read_lease_text
from airflow_provider_eos.spark.driver_lease import LeaseKeeper
from airflow_provider_eos.spark.driver_processes import this_host_identity
from tests.support.lease_race import race_for_the_lease
from tests.support.observers import another_worker

TTL = 300.0  # long: the keepers' own threads never renew within a test
ROUNDS = 40


def _checkpoint(tmp_path: Path) -> CheckpointReader:
    return CheckpointReader(str(tmp_path / "checkpoint"))


def _claims_left(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "checkpoint" / "eos").iterdir() if p.name != "driver-lease.json")


def test_of_two_drivers_taking_a_free_lease_together_exactly_one_wins_every_round(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path)
    for round_ in range(ROUNDS):
        tokens = (f"eos-orders-{round_:04d}aaaaaaaaaaaaaaaa", f"eos-orders-{round_:04d}bbbbbbbbbbbbbbbb")
        if round_ % 4 == 3:  # an expired lease of a driver elsewhere, not released: free too
            stale = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=120)
            write_driver_lease(checkpoint, DriverLease(token="eos-orders-expired00000000000", pid=4242,
                                                       **another_worker().model_dump(), started_at=stale,
                                                       renewed_at=stale, ttl_s=30))
        won, refused = race_for_the_lease(checkpoint, tokens, TTL)
        assert len(won) == 1 and len(refused) == 1, (
            f"round {round_}: {len(won)} drivers took the lease ({[k._lease.token for k in won]}), "
            f"{len(refused)} were refused"
        )
        winner = won[0]._lease.token
        assert winner in str(refused[0]) and "another driver holds the pipeline's lease" in str(refused[0])
        held = read_driver_lease(checkpoint)
        assert held is not None and held.token == winner and not held.released, (round_, held)
        assert _claims_left(tmp_path) == [], f"round {round_}: the winner left claims behind"
        won[0].release(query_stopped=True)  # the next round finds a released lease: free
        assert read_driver_lease(checkpoint).released


def _claim(checkpoint: CheckpointReader, *, here: bool, pid: int, stamped_s_ago: float) -> DriverLease:
    """A taker's claim on the current lease, left as a taker that stopped between its claim and its lease."""
    stamped = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=stamped_s_ago)
    identity = this_host_identity() if here else another_worker().model_copy(update={"host": "worker-7"})
    claim = DriverLease(token="eos-orders-claimant00000000000", app_id="local-9", pid=pid, **identity.model_dump(),
                        started_at=stamped, renewed_at=stamped, ttl_s=30, sequence=-1)
    assert create_lease_claim(checkpoint, lease_base(read_lease_text(checkpoint)[0]), 0, claim)
    return claim


def test_a_live_claim_refuses_a_newcomer_naming_the_claimant(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path)
    _claim(checkpoint, here=False, pid=4343, stamped_s_ago=1)
    with pytest.raises(DriverLeaseHeldError) as refused:
        LeaseKeeper(checkpoint, "eos-orders-newcomer000000000000", TTL).acquire()
    message = str(refused.value)
    for named in ("eos-orders-claimant00000000000", "pid 4343", "'worker-7'", claim_name("none", 0)):
        assert named in message, (named, message)
    assert read_driver_lease(checkpoint) is None, "the refused driver wrote a lease"


@pytest.mark.parametrize("left", ["expired elsewhere", "exited here"])
def test_a_crashed_takers_claim_is_taken_over_and_cleaned(tmp_path: Path, left: str) -> None:
    """A taker that died between its claim and its lease does not wedge the pipeline: its claim is judged as a lease."""
    checkpoint = _checkpoint(tmp_path)
    if left == "exited here":
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
        _claim(checkpoint, here=True, pid=int(gone.stdout), stamped_s_ago=1)
    else:
        _claim(checkpoint, here=False, pid=4343, stamped_s_ago=41)  # older than ttl 30 s + the 10 s margin
    tokens = ("eos-orders-0000aaaaaaaaaaaaaaaa", "eos-orders-0000bbbbbbbbbbbbbbbb")
    won, refused = race_for_the_lease(checkpoint, tokens, TTL)
    assert len(won) == 1 and len(refused) == 1, (len(won), refused)
    assert read_driver_lease(checkpoint).token == won[0]._lease.token
    assert _claims_left(tmp_path) == [], "the crashed taker's claim (or the winner's) was left behind"
    won[0].release(query_stopped=True)


def test_a_taker_whose_lease_was_taken_under_its_claim_withdraws_it_and_is_refused(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    """Between a taker's read and its claim another driver took the lease and cleaned its own claim."""
    import airflow_provider_eos.spark.driver_lease as keeper_module

    checkpoint = _checkpoint(tmp_path)
    first = LeaseKeeper(checkpoint, "eos-orders-first000000000000000", TTL)
    real_create = keeper_module.create_lease_claim

    def late_create(*args, **kwargs):  # the other driver takes the whole lease just before this claim lands
        monkeypatch.setattr(keeper_module, "create_lease_claim", real_create)
        first.acquire()
        return real_create(*args, **kwargs)

    monkeypatch.setattr(keeper_module, "create_lease_claim", late_create)
    with pytest.raises(DriverLeaseHeldError, match="eos-orders-first000000000000000"):
        LeaseKeeper(checkpoint, "eos-orders-second00000000000000", TTL).acquire()
    assert read_driver_lease(checkpoint).token == "eos-orders-first000000000000000"
    assert _claims_left(tmp_path) == [], "the late taker's claim on a state gone was left behind"
    first.release(query_stopped=True)


def test_a_taker_whose_first_write_fails_withdraws_its_claim_and_does_not_wedge_the_next(tmp_path: Path,
                                                                                        monkeypatch) -> None:
    import airflow_provider_eos.spark.driver_lease as keeper_module
    from airflow_provider_eos.core.errors import DriverLeaseError

    checkpoint = _checkpoint(tmp_path)

    def refused_write(*_args, **_kwargs):
        raise OSError("no space left on device")

    monkeypatch.setattr(keeper_module, "write_driver_lease", refused_write)
    with pytest.raises(DriverLeaseError, match="could not write its lease"):
        LeaseKeeper(checkpoint, "eos-orders-failed00000000000000", TTL).acquire()
    assert _claims_left(tmp_path) == [], "the failed taker's live claim would refuse the next driver"
    monkeypatch.undo()
    keeper = LeaseKeeper(checkpoint, "eos-orders-next0000000000000000", TTL)
    keeper.acquire()
    keeper.release(query_stopped=True)


def test_a_store_without_create_if_absent_confirms_a_creation_by_reading_it_back(monkeypatch) -> None:
    """Object stores (here fsspec's memory filesystem): write, wait a beat, read back; the record there won."""
    import uuid

    from airflow_provider_eos.core.checkpoint import eos_records

    monkeypatch.setattr(eos_records, "CREATE_CONFIRM_BEAT_S", 0.05)
    checkpoint = CheckpointReader(f"memory://lease-race-{uuid.uuid4().hex[:8]}/checkpoint")
    assert not checkpoint.is_local
    assert eos_records.create_eos_record(checkpoint, "claim.x", "first\n", writer="a")
    assert not eos_records.create_eos_record(checkpoint, "claim.x", "second\n", writer="b")
    real_open = checkpoint.fs.open

    def overtaken(path, mode="rb", **kwargs):  # another writer's put lands within this one's beat
        handle = real_open(path, mode, **kwargs)
        if "w" in mode:
            monkeypatch.setattr(checkpoint.fs, "open", real_open)
            handle.close = _then_overwrite(handle.close, checkpoint, path)
        return handle

    monkeypatch.setattr(checkpoint.fs, "open", overtaken)
    assert not eos_records.create_eos_record(checkpoint, "claim.y", "mine\n", writer="a")
    assert checkpoint.fs.cat_file(checkpoint.path("eos", "claim.y")) == b"theirs\n"


def _then_overwrite(close, checkpoint: CheckpointReader, path: str):
    def closing() -> None:
        close()
        checkpoint.fs.pipe_file(path, b"theirs\n")

    return closing


_TAKER = """
import sys
from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import DriverLeaseHeldError
from airflow_provider_eos.spark.driver_lease import LeaseKeeper

keeper = LeaseKeeper(CheckpointReader(sys.argv[1]), sys.argv[2], 300.0)
try:
    keeper.acquire()
except DriverLeaseHeldError as err:
    print(f"refused: {err}", flush=True)
    sys.exit(2)
print("won", flush=True)
sys.stdin.read()  # holds the lease (a live process) until the test closes stdin
keeper.release(query_stopped=True)
"""


def test_two_driver_processes_held_at_the_tests_lease_gate_take_the_lease_once(tmp_path: Path) -> None:
    """Processes, not threads, through the gate the real ``eos run`` race test holds its drivers at."""
    import os

    from tests.support.pipeline import REPO_ROOT

    gate = tmp_path / "gate"
    gate.mkdir()
    env = {**os.environ, "EOS_TEST_LEASE_GATE": str(gate), "EOS_TEST_LEASE_GATE_PARTIES": "2",
           "PYTHONPATH": f"{REPO_ROOT / 'tests' / 'support' / 'lease_gate'}:{REPO_ROOT}"}
    tokens = ("eos-orders-proc0aaaaaaaaaaaaaaaa", "eos-orders-proc0bbbbbbbbbbbbbbbb")
    takers = [subprocess.Popen([sys.executable, "-c", _TAKER, str(tmp_path / "checkpoint"), token], env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for token in tokens]
    try:
        said = [taker.stdout.readline().strip() for taker in takers]
        assert len(list(gate.iterdir())) == 2, "a taker did not pass the gate"
        assert sorted(line.split(":")[0] for line in said) == ["refused", "won"], said
        winner = tokens[said.index("won")]
        assert winner in said[1 - said.index("won")], said
        assert read_driver_lease(_checkpoint(tmp_path)).token == winner
    finally:
        for taker in takers:
            taker.communicate(timeout=60)
    assert read_driver_lease(_checkpoint(tmp_path)).released
