"""Whether the real job's driver is gone, asked from a worker that cannot see its processes (issue 26).

The observer here stands for another Airflow worker: it passes a :class:`HostIdentity` with another
pid namespace, so this host's process table gives no evidence, and only the driver's lease in the
checkpoint and the cluster manager's record can say anything. Small lease ttl (6 s) to keep it short.
"""

from __future__ import annotations

import datetime as dt
import time
import urllib.request
from pathlib import Path

import pytest

from airflow_provider_eos.core.application_links import LinkScanner
from airflow_provider_eos.core.dag_ids import pipeline_dag_id
from airflow_provider_eos.core.driver import (
    DRIVER_TOKEN_ENV,
    DriverHandle,
    EvidenceSource,
    Liveness,
    driver_token,
)
from airflow_provider_eos.core.driver_lease import CLOCK_SKEW_MARGIN, read_driver_lease
from airflow_provider_eos.spark.driver_processes import this_host_identity
from airflow_provider_eos.usecases.driver_liveness import (
    lease_evidence,
    manager_evidence,
    observe_driver_anywhere,
    wait_until_driver_gone,
)
from tests.support.observers import another_worker
from tests.support.pipeline import (
    PipelineHarness,
    assert_exactly_once,
    json_events,
    kill_group,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TTL_S = 6


def _handle(harness: PipelineHarness, token: str, master: str, manager_url: str | None = None) -> DriverHandle:
    now = dt.datetime.now(dt.UTC)
    return DriverHandle(pipeline=harness.spec.name, token=token, master=master, submitted_at=now,
                        earliest_start=now - dt.timedelta(seconds=1), manager_url=manager_url,
                        **this_host_identity().model_dump())


def _said(seen, source: EvidenceSource) -> Liveness:
    return next(each.says for each in seen.sources if each.source is source)


def _running(harness: PipelineHarness, token: str) -> object:
    """Start the job with the driver token (as the operator tags it) and wait for its first committed batch."""
    process, log_path = harness.start(env_extra={DRIVER_TOKEN_ENV: token})
    checkpoint = harness.checkpoint()
    started = wait_for(lambda: process.poll() is not None or checkpoint.latest_committed_batch() is not None, 180)
    assert started and process.poll() is None, log_path.read_text()[-3000:]
    return process


def test_a_killed_local_driver_is_gone_by_its_lease_for_another_worker_and_a_clean_end_releases_it(
    bootstrap: str, tmp_path: Path
) -> None:
    harness = PipelineHarness(bootstrap, tmp_path, trigger="2 seconds", max_offsets_per_trigger=100,
                              writers="driver", transform=None)
    harness.with_overrides(driver_lease_ttl_s=TTL_S)
    records, valid, malformed = json_events(500)
    harness.produce_input(records)
    token = driver_token(harness.spec.name, pipeline_dag_id(harness.spec.name), f"manual__{time.time()}")
    handle, elsewhere = _handle(harness, token, "local[2]"), another_worker()
    checkpoint = harness.checkpoint()

    process = _running(harness, token)
    alive = observe_driver_anywhere(handle, checkpoint, here=elsewhere)
    assert alive.liveness is Liveness.ALIVE, alive.evidence
    assert _said(alive, EvidenceSource.PROCESS_TABLE) is Liveness.UNKNOWN
    assert _said(alive, EvidenceSource.LEASE) is Liveness.ALIVE
    here = observe_driver_anywhere(handle, checkpoint)  # the driver's own host sees its processes too
    assert _said(here, EvidenceSource.PROCESS_TABLE) is Liveness.ALIVE and here.processes

    kill_group(process)  # SIGKILL: no release, the lease only stops being renewed
    killed_at = time.monotonic()
    assert observe_driver_anywhere(handle, checkpoint, here=elsewhere).liveness is not Liveness.GONE
    gone = wait_until_driver_gone(handle, checkpoint, 60, poll_s=1, here=elsewhere)
    waited = time.monotonic() - killed_at
    print(f"\nkilled driver GONE by its lease {waited:.1f}s after SIGKILL (ttl {TTL_S}s): {gone.evidence}")
    assert gone.liveness is Liveness.GONE, gone.evidence
    assert _said(gone, EvidenceSource.LEASE) is Liveness.GONE
    assert _said(gone, EvidenceSource.PROCESS_TABLE) is Liveness.UNKNOWN
    # The last renewal came at most ttl/3 before the kill; the lease expires ttl + the clock margin after it.
    assert waited >= TTL_S + CLOCK_SKEW_MARGIN.total_seconds() - TTL_S / 3 - 1, "gone before the lease expired"

    # The next run of the pipeline drains the rest and ends by itself: it releases its lease, gone at once.
    harness.with_overrides(trigger="available_now")
    second = driver_token(harness.spec.name, pipeline_dag_id(harness.spec.name), f"manual__{time.time()}")
    process, log_path = harness.start(env_extra={DRIVER_TOKEN_ENV: second})
    assert process.wait(300) == 0, log_path.read_text()[-3000:]
    lease = read_driver_lease(checkpoint)
    assert lease is not None and lease.token == second and lease.released and lease.query_id
    ended = observe_driver_anywhere(_handle(harness, second, "local[2]"), checkpoint, here=elsewhere)
    assert ended.liveness is Liveness.GONE and "released" in ended.evidence, ended.evidence
    assert_exactly_once(harness, valid, malformed)  # the killed driver left nothing that breaks exactly-once


def test_the_standalone_masters_record_says_alive_then_gone_after_the_driver_is_killed(
    bootstrap: str, spark_standalone, tmp_path: Path
) -> None:
    harness = PipelineHarness(bootstrap, tmp_path, trigger="2 seconds", max_offsets_per_trigger=100,
                              writers="driver", transform=None, master=spark_standalone.master_url)
    harness.with_overrides(driver_lease_ttl_s=TTL_S)
    harness.produce_input(json_events(300)[0])
    token = driver_token(harness.spec.name, pipeline_dag_id(harness.spec.name), f"manual__{time.time()}")
    handle = _handle(harness, token, spark_standalone.master_url, spark_standalone.info.webui_url)
    elsewhere = another_worker()
    checkpoint = harness.checkpoint()

    process = _running(harness, token)
    assert manager_evidence(handle).says is Liveness.ALIVE, manager_evidence(handle).detail
    assert lease_evidence(handle, checkpoint).says is Liveness.ALIVE
    # The submit task's application link, from the driver's own EOS-APP line: the master's page of this application.
    scanner = LinkScanner(spark_standalone.master_url, "client", spark_standalone.info.webui_url)
    log = (harness.work_dir / f"run-{harness.runs}.log").read_text(errors="replace")
    (links,) = [found for line in log.splitlines() if (found := scanner.feed(line)) is not None]
    app_id = links.spark_application_url.rsplit("appId=", 1)[1]
    assert app_id.startswith("app-") and links.spark_application_url.startswith(spark_standalone.info.webui_url)
    with urllib.request.urlopen(links.spark_application_url, timeout=10) as page:
        text = page.read().decode()
    # The master knows the id (a page of an unknown one says so) and names it after the run's driver token.
    assert app_id in text and token in text and "No running application" not in text, text[-2000:]

    kill_group(process)
    killed_at = time.monotonic()
    master_gone = wait_for(lambda: manager_evidence(handle).says is Liveness.GONE, 90, interval_s=1)
    print(f"\nstandalone master's record GONE {time.monotonic() - killed_at:.1f}s after SIGKILL: "
          f"{manager_evidence(handle).detail}")
    assert master_gone, manager_evidence(handle).detail
    seen = observe_driver_anywhere(handle, checkpoint, here=elsewhere)
    assert seen.liveness is Liveness.GONE and _said(seen, EvidenceSource.STANDALONE_MASTER) is Liveness.GONE, \
        seen.evidence
    assert spark_standalone.info.webui_url in seen.evidence  # the sentence names the master it asked
