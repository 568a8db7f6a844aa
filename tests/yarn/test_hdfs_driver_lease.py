"""A driver lease on HDFS, read while its driver renews it (design note 48).

HDFS cannot rename over a file, so the lease there is rewritten in place every ``ttl / 3``; a reader
that lands inside a rewrite meets an empty or half-written record. The observer must still read the
renewing driver's lease as ALIVE: one unlucky read turned a live YARN driver's lease into "no
evidence" in CI. Real HDFS (the session's MiniYARNCluster), no Spark.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from collections import Counter

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver import DriverHandle, Liveness, driver_token
from airflow_provider_eos.core.driver_lease import DriverLease, read_driver_lease, write_driver_lease
from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.devstack.yarn import YarnClusterInfo
from airflow_provider_eos.usecases.driver_liveness import lease_evidence

pytestmark = [pytest.mark.integration]

OBSERVATIONS = 40


def test_a_lease_rewritten_in_place_reads_alive_while_its_driver_renews_it(on_yarn: YarnClusterInfo) -> None:
    checkpoint = CheckpointReader(f"{on_yarn.namenode_url}/eos/lease-{uuid.uuid4().hex[:8]}/checkpoint")
    assert not checkpoint.is_local
    started = dt.datetime.now(dt.UTC)
    token = driver_token("lease_on_hdfs", "eos_pipeline__lease_on_hdfs", "manual__1")
    handle = DriverHandle(pipeline="lease_on_hdfs", token=token, host="yarn-node", master="yarn",
                          deploy_mode="cluster", submitted_at=started - dt.timedelta(seconds=5))
    lease = DriverLease(token=token, host="yarn-node", pid=4242, started_at=started, renewed_at=started,
                        ttl_s=60, sequence=0)
    write_driver_lease(checkpoint, lease)
    stop, renewals, failures = threading.Event(), Counter(), []

    def renew_without_pause() -> None:  # a driver renewing far more often than ttl / 3, to land inside rewrites
        sequence = 0
        try:
            while not stop.is_set():
                sequence += 1
                write_driver_lease(checkpoint, lease.model_copy(update={"renewed_at": dt.datetime.now(dt.UTC),
                                                                        "sequence": sequence}))
                renewals["written"] += 1
        except Exception as err:  # a renewer that died would leave the observations a still file
            failures.append(err)

    renewer = threading.Thread(target=renew_without_pause, name="eos-test-lease-renewer", daemon=True)
    renewer.start()
    try:
        raw = [_raw_read(checkpoint) for _ in range(OBSERVATIONS)]
        before = renewals["written"]
        seen = [lease_evidence(handle, checkpoint) for _ in range(OBSERVATIONS)]
        during = renewals["written"] - before
    finally:
        stop.set()
        renewer.join(timeout=30)
    assert not failures, failures
    assert during >= OBSERVATIONS // 4, f"only {during} rewrites during the observations"
    torn = [each for each in raw if each != "whole"]
    print(f"\n{renewals['written']} rewrites ({during} during the observations); "
          f"{len(torn)} of {OBSERVATIONS} single reads met a rewrite: {torn[:1]}")
    assert torn, "no single read met a rewrite in place: this test proves nothing on this HDFS"
    unknown = [each.detail for each in seen if each.says is not Liveness.ALIVE]
    assert not unknown, f"{len(unknown)} of {OBSERVATIONS} observations were not ALIVE: {unknown[:3]}"


def _raw_read(checkpoint: CheckpointReader) -> str:
    try:
        return "whole" if read_driver_lease(checkpoint) is not None else "absent"
    except (CheckpointError, OSError) as err:  # OSError: a block replaced mid-read
        return str(err)
