"""Two drivers taking one free lease on HDFS at the same instant: exactly one takes it (design note 79).

On HDFS the claim is WebHDFS's ``CREATE`` with ``overwrite=false``, which the NameNode refuses when
the file exists (fsspec's ``webhdfs`` always overwrites). Real HDFS (the session's
MiniYARNCluster), two lease keepers released together by a barrier, no Spark.
"""

from __future__ import annotations

import uuid

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.checkpoint.eos_records import create_eos_record
from airflow_provider_eos.core.driver_lease import read_driver_lease
from airflow_provider_eos.devstack.yarn import YarnClusterInfo
from tests.support.lease_race import race_for_the_lease

pytestmark = [pytest.mark.integration]

TTL = 300.0  # long: the keepers' own threads never renew within the test
ROUNDS = 8


def test_of_two_drivers_taking_a_free_lease_on_hdfs_together_exactly_one_wins(on_yarn: YarnClusterInfo) -> None:
    checkpoint = CheckpointReader(f"{on_yarn.namenode_url}/eos/lease-race-{uuid.uuid4().hex[:8]}/checkpoint")
    assert not checkpoint.is_local
    # The primitive itself: a second create of one record is refused, and leaves the first's text.
    assert create_eos_record(checkpoint, "probe", "first\n", writer="a")
    assert not create_eos_record(checkpoint, "probe", "second\n", writer="b")
    assert checkpoint.fs.cat_file(checkpoint.path("eos", "probe")) == b"first\n"
    checkpoint.fs.rm_file(checkpoint.path("eos", "probe"))

    for round_ in range(ROUNDS):
        tokens = (f"eos-orders-{round_:04d}aaaaaaaaaaaaaaaa", f"eos-orders-{round_:04d}bbbbbbbbbbbbbbbb")
        won, refused = race_for_the_lease(checkpoint, tokens, TTL)
        assert len(won) == 1 and len(refused) == 1, (
            f"round {round_}: {len(won)} drivers took the lease ({[k._lease.token for k in won]}), {refused}")
        winner = won[0]._lease.token
        assert winner in str(refused[0]), refused[0]
        held = read_driver_lease(checkpoint)
        assert held is not None and held.token == winner and not held.released, (round_, held)
        left = [p for p in checkpoint.fs.ls(checkpoint.path("eos"), detail=False) if ".claim." in p]
        assert not left, f"round {round_}: claims left behind: {left}"
        won[0].release(query_stopped=True)
