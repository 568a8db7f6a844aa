"""A batch in flight that advances is progress (core/health/in_flight.py), for the commit age and the lag rules.

Thresholds ``TH``: warn after 20 s, stop after 40 s. Batch 0 committed 5 s before the first sample; batch 1,
planned, runs through every sample with 100 records of input waiting.
"""

from __future__ import annotations

from airflow_provider_eos.core.health import HealthStatus, InFlightBatch, LagStatus
from airflow_provider_eos.core.health.in_flight import BatchAdvance, advance_between, last_advance
from airflow_provider_eos.core.transactions import TxnState
from tests.support.health_samples import PREFIX, SECOND, T0, finding, out, part, run, sample, txn

TIMES = (0, 10, 20, 30, 40, 50, 60)


def _batch_one(t_s: float, files: int, *, hwm: int = 9, open_transaction: bool = False, batch: int = 1):
    transactions = [txn(f"{PREFIX}-0", 4, at_s=t_s)] if open_transaction else []
    return sample(t_s, [part(140, 40)], outputs=[out(9, hwm)], commit_s=-5, transactions=transactions,
                  in_flight=InFlightBatch(batch=batch, spill_files=files, spill_bytes=1000 * files))


def test_a_long_batch_that_keeps_spilling_is_not_stopped() -> None:
    report = run([_batch_one(t, files=index) for index, t in enumerate(TIMES)])
    (row,) = report.partitions
    assert row.status is LagStatus.OK
    assert row.detail == "no commit for 1m00s, but batch 1 advanced within the last 10s (its spill grew to 6 " \
                         "file(s), 6000 bytes)"
    (age,) = finding(report, "commit_age")
    assert age.status is HealthStatus.HEALTHY and "but batch 1 advanced within the last 10s" in age.detail
    assert report.status is HealthStatus.HEALTHY


def test_the_same_window_without_its_spill_is_stopped() -> None:
    # What the rules said of every long batch before: no commit for four cycles while input waits.
    report = run([_batch_one(t, files=0) for t in TIMES])
    (row,) = report.partitions
    assert row.status is LagStatus.STOP and finding(report, "commit_age")[0].status is HealthStatus.UNHEALTHY


def test_a_batch_that_stopped_advancing_is_stopped_after_the_threshold() -> None:
    grew_until = {0: 0, 10: 1}
    samples = [_batch_one(t, files=grew_until.get(t, 2)) for t in TIMES]
    # The spill last grew between 10 s and 20 s: 40 s before the newest sample at the most.
    assert last_advance(samples) == BatchAdvance(batch=1, since_ms=T0 + 10 * SECOND,
                                                 evidence="its spill grew to 2 file(s), 2000 bytes")
    report = run(samples)
    assert report.partitions[0].status is LagStatus.STOP and report.status is HealthStatus.UNHEALTHY
    # At 40 s it was 30 s at the most: still progress, judged by the commit age as DEGRADED (past warn, not stop).
    shorter = run(samples[:-2])
    assert shorter.partitions[0].status is LagStatus.OK
    assert finding(shorter, "commit_age")[0].status is HealthStatus.DEGRADED


def test_an_open_transaction_that_writes_the_output_is_progress() -> None:
    # The spill is complete (4 files); the driver produces from it in its transaction.
    producing = [_batch_one(t, files=4, hwm=9 + index * 50, open_transaction=True) for index, t in enumerate(TIMES)]
    report = run(producing)
    assert report.partitions[0].status is LagStatus.OK
    assert "its open transaction wrote 50 record(s) to the output" in report.partitions[0].detail
    # The output growing with no transaction of the prefix open is not this batch's doing.
    assert advance_between(_batch_one(0, 4, hwm=9), _batch_one(10, 4, hwm=59)) is None


def test_only_growth_of_the_same_batch_counts() -> None:
    assert advance_between(_batch_one(0, 3), _batch_one(10, 1)) is None  # a restarted driver cleared the spill
    assert advance_between(_batch_one(0, 3), _batch_one(10, 4, batch=2)) is None  # another batch
    assert advance_between(_batch_one(0, 3), _batch_one(10, 3)) is None
    completed = _batch_one(0, 3, open_transaction=True).model_copy(update={"in_flight": None})
    assert advance_between(completed, _batch_one(10, 4)) is None
    committing = _batch_one(0, 1, open_transaction=True)
    committing_later = _batch_one(10, 1, hwm=20).model_copy(
        update={"transactions": (txn(f"{PREFIX}-0", 4, at_s=10, state=TxnState.PREPARE_COMMIT),)})
    assert advance_between(committing, committing_later) is None
    # A window of samples taken before the probe read the batch in flight has no advance.
    assert last_advance([sample(t, [part(140, 40)]) for t in TIMES]) is None
