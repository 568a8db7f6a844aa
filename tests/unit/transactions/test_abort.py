"""The abort plan (what recovery does with each open transaction) and the abort report."""

from __future__ import annotations

import json

from airflow_provider_eos.core.presentation import abort_text
from airflow_provider_eos.core.transactions import (
    AbortReport,
    AbortRow,
    Action,
    HangingTransaction,
    Outcome,
    PartitionOffsets,
    SafetyCheck,
    TransactionListing,
    TxnState,
    find_hanging,
    plan_abort,
)
from tests.unit.transactions.builders import NOW, TP0, TP1, producer, txn


def _hanging_rows() -> list:
    listings = [TransactionListing(transactional_id="app-3", producer_id=2, state=TxnState.EMPTY),
                TransactionListing(transactional_id="pfx-1", producer_id=3, state=TxnState.EMPTY)]
    descriptions = {"app-3": txn("app-3", TxnState.EMPTY, partitions=()), "pfx-1": txn("pfx-1", TxnState.EMPTY)}
    producers = {
        TP0: [producer(1, start=4)],
        TP1: [producer(2, start=9), producer(3, start=11, coordinator_epoch=5)],
    }
    return find_hanging(producers, listings, descriptions, now=NOW, max_transaction_timeout_ms=0)


def test_plan_fences_lingering_leaves_completing_and_never_shows_foreign_ids() -> None:
    transactions = [
        txn("pfx-0", age_ms=30_000),
        txn("pfx-1", TxnState.PREPARE_ABORT),
        txn("other-0"),
        txn("pfx2-0"),
    ]
    rows = plan_abort("pfx", transactions, _hanging_rows(), now=NOW, transaction_timeout_ms=60_000)
    summary = [(r.kind, r.transactional_id, r.action) for r in rows]
    assert summary == [
        ("lingering", "pfx-0", Action.FENCE),
        ("completing", "pfx-1", Action.LEAVE_COMPLETING),
        ("hanging", None, Action.ABORT_MARKER),  # unattributed, on the pipeline's own partition
        ("hanging", "app-3", Action.LEAVE_FOREIGN),
        ("hanging", "pfx-1", Action.ABORT_MARKER),
    ]
    ids = {r.transactional_id for r in rows}
    assert "other-0" not in ids and "pfx2-0" not in ids
    hanging_ours = rows[-1]
    assert hanging_ours.start_offset == 11 and hanging_ours.coordinator_epoch == 5
    assert hanging_ours.partitions == (TP1,)
    assert "kafka-transactions.sh abort" in rows[3].detail


def test_an_unattributed_hanging_transaction_is_left_when_not_every_id_is_visible() -> None:
    rows = plan_abort("pfx", [], _hanging_rows(), now=NOW, transaction_timeout_ms=60_000, every_id_visible=False)
    actions = [(row.transactional_id, row.action) for row in rows]
    # ListTransactions hides the ids a principal may not describe: "no id" may be another application's.
    assert actions == [(None, Action.LEAVE_UNATTRIBUTABLE), ("app-3", Action.LEAVE_FOREIGN),
                       ("pfx-1", Action.ABORT_MARKER)]
    assert not Action.LEAVE_UNATTRIBUTABLE.acts
    assert "DESCRIBE on TRANSACTIONAL_ID '*'" in str(rows[0].detail)


def test_report_render_and_dict() -> None:
    rows = plan_abort("pfx", [txn("pfx-0", age_ms=30_000)], _hanging_rows(), now=NOW, transaction_timeout_ms=60_000)
    done = tuple(r.with_outcome(Outcome.ABORTED if r.action.acts else Outcome.LEFT) for r in rows)
    report = AbortReport(
        prefix="pfx",
        scanned_at=NOW,
        executed=True,
        safety=SafetyCheck(reasons=("transaction 'pfx-0' is ongoing",), forced=True),
        rows=done,
        offsets_before=(PartitionOffsets(tp=TP0, lso=4, hwm=9), PartitionOffsets(tp=TP1, lso=9, hwm=12)),
        offsets_after=(PartitionOffsets(tp=TP0, lso=10, hwm=10), PartitionOffsets(tp=TP1, lso=9, hwm=13)),
        remaining=tuple(r for r in rows if r.action is Action.LEAVE_FOREIGN),
        hanging_min_age_ms=0,
    )
    text = abort_text(report)
    assert "Forced despite signs that the job is alive" in text
    for expected in ("lingering", "pfx-0", "abort by fencing", "aborted", "30s", "out-0", "LSO before", "Still open"):
        assert expected in text, expected
    assert report.ok  # what is left is not the pipeline's to abort
    data = json.loads(json.dumps(report.to_dict()))
    assert data["ok"] is True and data["executed"] is True and data["safety"]["forced"] is True
    assert data["rows"][0]["outcome"] == "aborted"
    assert data["offsets_after"][0] == {"partition": "out-0", "lso": 10, "hwm": 10, "pinned": False}


def test_report_not_ok_when_an_abort_failed_or_ours_remain() -> None:
    (row,) = plan_abort("pfx", [txn("pfx-0")], [], now=NOW, transaction_timeout_ms=60_000)
    base = {"prefix": "pfx", "scanned_at": NOW, "safety": SafetyCheck(reasons=())}
    failed = AbortReport(executed=True, rows=(row.with_outcome(Outcome.FAILED, "boom"),), **base)
    assert not failed.ok and failed.failures[0].detail == "boom"
    dry = AbortReport(executed=False, rows=(row.with_outcome(Outcome.WOULD_ABORT),), remaining=(row,), **base)
    assert not dry.ok
    assert "with --execute" in abort_text(dry)
    empty = AbortReport(executed=True, rows=(), **base)
    assert empty.ok and "(no rows)" in abort_text(empty) and "nothing open" in abort_text(empty)



def test_report_json_reads_back_into_an_equal_report() -> None:
    rows = plan_abort("pfx", [txn("pfx-0", age_ms=30_000)], _hanging_rows(), now=NOW, transaction_timeout_ms=60_000)
    report = AbortReport(
        prefix="pfx",
        scanned_at=NOW,
        executed=False,
        safety=SafetyCheck(reasons=("a recent commit",)),
        rows=tuple(r.with_outcome(Outcome.WOULD_ABORT if r.action.acts else Outcome.LEFT) for r in rows),
        offsets_before=(PartitionOffsets(tp=TP0, lso=4, hwm=9),),
        offsets_after=(PartitionOffsets(tp=TP0, lso=4, hwm=9),),
        remaining=rows[:1],
        hanging_min_age_ms=0,
        notes=("topic 'dlq' does not exist",),
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert data["scanned_at"] == "2026-01-15T12:00:00+00:00"
    assert data["rows"][0]["partitions"] == ["out-0"] and data["rows"][0]["action"] == "abort by fencing"
    assert data["ok"] is False and data["safety"]["may_act"] is False
    assert AbortReport.model_validate(data) == report
    assert AbortRow.model_validate(data["rows"][-1]) == report.rows[-1]


def test_hanging_json_names_the_partition_and_reads_back() -> None:
    hanging = _hanging_rows()
    data = hanging[0].to_dict()
    assert data["partition"] == "out-0" and data["reason"] == "no coordinator lists this producer id"
    assert data["producer"]["current_txn_start_offset"] == 4 and data["coordinator_state"] is None
    assert [HangingTransaction.model_validate(h.to_dict()) for h in hanging] == hanging
