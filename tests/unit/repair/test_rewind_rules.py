"""When a rewind is refused and what its plan warns about (:mod:`airflow_provider_eos.core.repair.rewind_rules`).

Tables over batch numbers only; tests/unit/repair/test_rewind_plan.py plans real checkpoints.
"""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.repair.rewind_files import StateScan
from airflow_provider_eos.core.repair.rewind_rules import (
    RetainedBatches,
    RewindTarget,
    after_last_commit,
    first_batch_purged,
    first_refusal,
    impossible_batch_id,
    replans_uncommitted_batch,
    restart_files_purged,
    state_purged,
)


def retained(offsets: range | tuple[int, ...], commits: range | tuple[int, ...]) -> RetainedBatches:
    return RetainedBatches(tuple(offsets), frozenset(commits))


def target(to_batch: int, *, committed: int | None = 9, planned: int | None = 9,
           offsets: range | tuple[int, ...] = range(10), commits: range | tuple[int, ...] = range(10)) -> RewindTarget:
    return RewindTarget("/cp", to_batch, committed, planned, retained(offsets, commits))


@pytest.mark.parametrize(("to_batch", "refused"), [(-2, True), (-100, True), (-1, False), (0, False), (7, False)])
def test_impossible_batch_id(to_batch: int, refused: bool) -> None:
    assert (impossible_batch_id(to_batch) is not None) is refused


# (id, target, the rule that refuses it or None, a phrase of its message)
REFUSALS = [
    ("rewind-to-last-commit", target(9), None, ""),
    ("rewind-to-older-batch", target(3), None, ""),
    ("rewind-before-first-batch", target(-1), None, ""),
    ("rewind-before-first-of-empty-checkpoint", target(-1, committed=None, planned=None, offsets=(), commits=()),
     None, ""),
    ("forward", target(10), after_last_commit, "cannot rewind forward to batch 10"),
    ("forward-when-nothing-committed", target(0, committed=None, planned=0, offsets=(0,), commits=()),
     after_last_commit, "the last committed batch of /cp is none"),
    ("target-offsets-purged", target(2, offsets=range(4, 10), commits=range(4, 10)), restart_files_purged,
     "offsets/2, commits/2, offsets/1 are gone"),
    ("previous-offsets-purged", target(4, offsets=range(4, 10), commits=range(4, 10)), restart_files_purged,
     "offsets/3 is gone"),
    ("target-commit-purged", target(4, offsets=range(10), commits=range(5, 10)), restart_files_purged,
     "commits/4 is gone"),
    ("oldest-restartable", target(5, offsets=range(4, 10), commits=range(4, 10)), None, ""),
    ("first-batch-purged", target(-1, offsets=range(4, 10), commits=range(4, 10)), first_batch_purged,
     "offsets/0 was purged (oldest retained offsets file: offsets/4)"),
]


@pytest.mark.parametrize(("t", "rule", "phrase"), [row[1:] for row in REFUSALS], ids=[row[0] for row in REFUSALS])
def test_the_first_refusal_names_what_is_gone(t: RewindTarget, rule, phrase: str) -> None:
    refused = first_refusal(t)
    if rule is None:
        assert refused is None
        return
    assert refused is not None and phrase in refused.message
    assert rule(t) is not None and str(rule(t)) == str(refused)


@pytest.mark.parametrize(
    ("offsets", "commits", "earliest", "fix"),
    [
        (range(10), range(10), -1, "the earliest batch the retained offsets/ and commits/ allow is -1"),
        (range(4, 10), range(4, 10), 5, "allow is 5 (a stateful query may need a later one)"),
        (range(4, 10), range(7, 10), 7, "allow is 7"),
        ((8,), (8,), None, "otherwise"),
        ((), (), None, "otherwise"),
    ],
    ids=["whole-history", "purged-head", "commits-purged-further", "one-batch-left", "empty"],
)
def test_the_earliest_target_needs_its_offsets_commit_and_previous_offsets(offsets, commits, earliest, fix) -> None:
    batches = retained(offsets, commits)
    assert batches.earliest_rewind_target() == earliest
    assert fix in batches.earliest_fix("otherwise")


@pytest.mark.parametrize(
    ("to_batch", "lowest_kept", "refused"),
    [
        (3, {"state/0/0": 2, "state/0/1": 4}, False),
        (3, {"state/0/0": 2, "state/0/1": None}, True),
        (-1, {"state/0/0": None}, False),  # before the first batch: the state starts empty
        (3, {}, False),
    ],
    ids=["every-store-kept", "one-store-purged", "before-first-batch", "no-stores"],
)
def test_state_purged(to_batch: int, lowest_kept: dict[str, int | None], refused: bool) -> None:
    scan = StateScan(moves=[], lowest_present=dict.fromkeys(lowest_kept, 9), lowest_kept=lowest_kept)
    error = state_purged(target(to_batch), scan)
    assert (error is not None) is refused
    if error is not None:
        assert "state store state/0/1 keeps no version at or below 4 (lowest: 9)" in error.message


@pytest.mark.parametrize(
    ("t", "warns"),
    [
        (target(9, committed=9, planned=10), True),
        (target(9, committed=9, planned=9), False),
        (target(8, committed=9, planned=10), False),  # an older target moves the planned batch without surprise
        (target(-1, committed=None, planned=0), True),
        (target(-1, committed=None, planned=None), False),
    ],
    ids=["planned-after-last-commit", "nothing-planned-after", "older-target", "first-batch-planned", "empty"],
)
def test_replans_uncommitted_batch(t: RewindTarget, warns: bool) -> None:
    warning = replans_uncommitted_batch(t)
    assert (warning is not None) is warns
    if warning is not None:
        assert f"offsets/{t.last_planned} (planned, not committed) will be moved" in warning
