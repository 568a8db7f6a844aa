"""The steps of the abort use case that decide without a broker: acting on one row, and when the gate refuses.

The whole abort against a broker is tests/integration/test_transactions_recovery.py's; here each
row's outcome and the gate's choice are tables, with the Kafka calls replaced.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from airflow_provider_eos.core import transactions as txn
from airflow_provider_eos.core.errors import EosError, UnsafeToActError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.usecases import abort as abort_module

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SPEC = PipelineSpec(
    name="orders", kafka={"bootstrap.servers": "localhost:1"}, input_topics=["orders-in"], output_topic="orders-out",
    group_id="orders-sink", transactional_id_prefix="orders-eos", checkpoint_location="/nowhere",
)


def row(action: txn.Action, transactional_id: str | None = "orders-eos-0") -> txn.AbortRow:
    return txn.AbortRow(
        kind="lingering" if action is txn.Action.FENCE else "hanging", transactional_id=transactional_id,
        state=None, producer_id=7, producer_epoch=1, age_ms=1000, partitions=(TopicPartition("orders-out", 0),),
        action=action,
    )


def scope() -> abort_module._Scope:
    return abort_module._Scope(admin=None, spec=SPEC, partitions=[], hanging_min_age_ms=0, notes=())  # type: ignore[arg-type]


def _fails(*args: Any) -> Any:
    raise EosError("the broker said no")


# (id, row, what fence does, what abort_hanging does, outcome, detail)
ACTS = [
    ("fence-lingering", row(txn.Action.FENCE), None, None, txn.Outcome.ABORTED, ""),
    ("abort-hanging", row(txn.Action.ABORT_MARKER), None, lambda admin, r: True, txn.Outcome.ABORTED, ""),
    ("hanging-closed-meanwhile", row(txn.Action.ABORT_MARKER), None, lambda admin, r: False, txn.Outcome.LEFT,
     "no longer open when the abort was about to be sent"),
    ("fence-fails", row(txn.Action.FENCE), _fails, None, txn.Outcome.FAILED, "the broker said no"),
    ("abort-fails", row(txn.Action.ABORT_MARKER), None, _fails, txn.Outcome.FAILED, "the broker said no"),
    ("leave-foreign", row(txn.Action.LEAVE_FOREIGN), _fails, _fails, txn.Outcome.LEFT, ""),
    ("leave-completing", row(txn.Action.LEAVE_COMPLETING), _fails, _fails, txn.Outcome.LEFT, ""),
    # An unattributed hanging transaction has no id to fence: it is aborted with AbortTransaction.
    ("fence-without-id", row(txn.Action.FENCE, None), _fails, lambda admin, r: True, txn.Outcome.ABORTED, ""),
]


@pytest.mark.parametrize(("planned", "fence", "abort_hanging", "outcome", "detail"), [a[1:] for a in ACTS],
                         ids=[a[0] for a in ACTS])
def test_each_row_gets_one_outcome(monkeypatch: pytest.MonkeyPatch, planned: txn.AbortRow, fence, abort_hanging,
                                   outcome: txn.Outcome, detail: str) -> None:
    monkeypatch.setattr(abort_module, "fence", fence or (lambda spec, transactional_id: None))
    monkeypatch.setattr(abort_module, "abort_hanging", abort_hanging or _fails)
    done = abort_module._act(scope(), planned)
    assert (done.outcome, done.detail) == (outcome, detail)


SIGNS = txn.LivenessSigns(last_commit_time=NOW - dt.timedelta(seconds=1), now=NOW, transaction_timeout_ms=60_000,
                          quiet_period_ms=60_000)


@pytest.mark.parametrize(
    ("execute", "rows", "refused"),
    [
        (True, [row(txn.Action.FENCE)], True),
        (True, [row(txn.Action.LEAVE_FOREIGN)], False),  # nothing to do harms no one
        (True, [], False),
        (False, [row(txn.Action.FENCE)], False),  # a dry run reports the signs, never refuses
    ],
    ids=["execute-with-work", "execute-nothing-to-abort", "execute-empty", "dry-run"],
)
def test_the_gate_refuses_only_an_execution_with_something_to_do(execute: bool, rows: list[txn.AbortRow],
                                                                 refused: bool) -> None:
    first = abort_module._Scan(transactions=[], hanging=[], offsets=[], rows=rows)
    if refused:
        with pytest.raises(UnsafeToActError):
            abort_module._safety(scope(), first, SIGNS, execute=execute, force=False)
    else:
        safety = abort_module._safety(scope(), first, SIGNS, execute=execute, force=False)
        assert not safety.safe and safety.reasons  # the recent commit is reported either way
