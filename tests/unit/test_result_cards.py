"""The result cards a person reads in Airflow's UI (core/presentation): tables, bounds, and each result's card."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_provider_eos.core.errors import UnsafeToActError
from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.presentation import (
    ResultHeading,
    abort_card,
    align_card,
    error_card,
    fit,
    health_card,
    md_table,
    refusal_card,
    rewind_card,
    text_card,
    verification_card,
)
from airflow_provider_eos.core.repair import AlignPlan, AlignRow, CheckpointBatches, FileMove, RewindPlan, RewindResult
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import AbortReport, Outcome, SafetyCheck, plan_abort
from airflow_provider_eos.core.verification import PartitionVerdict, Verdict, VerificationReport
from tests.support.health_samples import rich_sample, run
from tests.unit.transactions.builders import NOW, txn

QUERY = "3ce7ddce-4f69-4f33-8998-9969860dfad1"
HEAD = ResultHeading("verify", "orders", "finding", "the group and the checkpoint disagree (KAFKA_BEHIND)",
                     next_step="Rewind the checkpoint to batch 1.")


def verdict_row(partition: int, verdict: Verdict, group: int | None, marker: int | None,
                query: str = QUERY) -> PartitionVerdict:
    return PartitionVerdict(
        tp=TopicPartition("orders", partition), verdict=verdict, checkpoint_batch=3,
        checkpoint_offset=40 + partition,
        group_offset=group, marker_batch=marker, marker_query_id=query if marker is not None else None,
        wal_offset=None, detail=f"partition {partition} is {verdict.value} because of the values found",
    )


def behind_report(partitions: int = 4) -> VerificationReport:
    rows = [verdict_row(p, Verdict.IN_SYNC, 40 + p, 3) for p in range(partitions)]
    rows[2] = verdict_row(2, Verdict.KAFKA_BEHIND, 22, 1)
    return VerificationReport(query_id=QUERY, last_committed=3, last_planned=3, rows=tuple(rows),
                              overall=Verdict.KAFKA_BEHIND)


def table(card: str) -> list[list[str]]:
    lines = [line for line in card.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]


# -- the Markdown table and the bounds ----------------------------------------------------------------


def test_md_table_pads_columns_right_aligns_numbers_and_escapes_pipes() -> None:
    text = md_table(["name", "offset"], [["a|b", 5], ["longer name", None], ["c", 12345]])
    lines = text.splitlines()
    assert lines[0] == "| name        | offset |"
    assert lines[1] == "| ----------- | -----: |"
    assert lines[2] == "| a\\|b        |      5 |"
    assert lines[3] == "| longer name |      - |"
    assert len({len(line) for line in lines}) == 1, "every line has the same width"
    assert md_table(["a"], []).endswith("(no rows)")
    with pytest.raises(ValueError, match="row 0 has 1 cells but the table has 2 columns"):
        md_table(["a", "b"], [["x"]])


def test_md_table_clips_wide_cells_to_one_line() -> None:
    text = md_table(["detail"], [["word " * 40 + "\nsecond line"]], max_cell=30)
    (row,) = text.splitlines()[2:]
    assert "\n" not in row and len(row) == len("| ") + 30 + len(" |") and row.rstrip(" |").endswith("…")


def test_fit_halves_the_rows_until_the_card_fits_and_cuts_only_as_a_last_resort() -> None:
    seen: list[int] = []

    def render(rows: int) -> str:
        seen.append(rows)
        return "head\n" + "row\n" * rows

    assert fit(render, 100, max_chars=60) == render(12)
    assert seen[:4] == [100, 50, 25, 12]
    cut = fit(lambda rows: "x" * 500, 10, max_chars=200)
    assert len(cut) <= 200 and cut.endswith("the task's XCom return_value holds the full report)")


def test_the_heading_never_shows_a_placeholder_next_step() -> None:
    for empty in ("None", "", "-"):
        text = "\n".join(ResultHeading("verify", "orders", "ok", "agree", next_step=empty).lines())
        assert "Next step" not in text
    lines = ResultHeading("abort", "orders", "ok", "nothing open", next_step="Nothing to do.", dry_run=True).lines()
    assert lines[0] == "## abort orders: OK (dry run: nothing changed)"
    assert "- Next step: Nothing to do." in lines


# -- the cards --------------------------------------------------------------------------------------


def test_verification_card_shows_the_worst_partition_first_with_offsets_marker_and_verdict() -> None:
    card = verification_card(HEAD, behind_report())
    assert card.startswith("## verify orders: FINDING\n")
    assert "- Next step: Rewind the checkpoint to batch 1." in card
    rows = table(card)
    assert rows[0] == ["partition", "ckpt offset", "group offset", "marker", "verdict"]
    assert rows[2] == ["orders-2", "42", "22", "1", "KAFKA_BEHIND"]
    assert [row[0] for row in rows[3:]] == ["orders-0", "orders-1", "orders-3"]
    assert "Verdicts: IN_SYNC 3, KAFKA_BEHIND 1 of 4 partition(s)" in card
    assert "Why orders-2 is KAFKA_BEHIND: partition 2 is KAFKA_BEHIND" in card


def test_verification_card_is_bounded_in_rows_and_characters() -> None:
    report = behind_report(500)
    card = verification_card(HEAD, report, max_rows=10)
    assert len(table(card)) == 2 + 10 and table(card)[2][-1] == "KAFKA_BEHIND"
    assert "_490 more partition(s) not shown; the XCom return_value holds all 500._" in card
    small = verification_card(HEAD, report, max_rows=200, max_chars=1500)
    assert len(small) <= 1500 and table(small)[2][-1] == "KAFKA_BEHIND"


def test_verification_card_names_a_marker_of_another_query() -> None:
    report = VerificationReport(query_id=QUERY, last_committed=3, last_planned=3, overall=Verdict.DIVERGED,
                                rows=(verdict_row(0, Verdict.DIVERGED, 40, 3, query="other-query-id"),),
                                issues=("the group's markers name query other-query-id",))
    card = verification_card(HEAD, report)
    assert table(card)[2][3] == "3 (query other-query…)"
    assert "- Issue: the group's markers name query other-query-id" in card


def test_abort_card_lists_what_changes_first_and_the_signs_of_a_live_job() -> None:
    rows = plan_abort("pfx", [txn("pfx-0", age_ms=30_000), txn("pfx-9")], [], now=NOW, transaction_timeout_ms=60_000)
    report = AbortReport(prefix="pfx", scanned_at=NOW, executed=False,
                         safety=SafetyCheck(reasons=("the checkpoint's newest commit is 5s old",)),
                         rows=tuple(r.with_outcome(Outcome.WOULD_ABORT) if r.action.acts else r for r in rows))
    card = abort_card(ResultHeading("abort", "orders", "finding", "1 would be aborted", dry_run=True), report)
    assert "(dry run: nothing changed)" in card
    assert "- the checkpoint's newest commit is 5s old" in card
    cells = table(card)
    assert cells[0] == ["transactional id", "kind", "age", "partitions", "action", "outcome"]
    assert cells[2][0] == "pfx-0" and cells[2][-1] == "would abort (dry run)"


def test_rewind_card_shows_the_batches_before_and_after_and_the_files() -> None:
    moves = tuple(FileMove(path=f"{kind}/{n}", kind=kind, number=n) for n in (2, 3) for kind in ("offsets", "commits"))
    before = CheckpointBatches(last_committed=3, last_planned=3, oldest_planned=0, oldest_committed=0)
    plan = RewindPlan(root="/ckpt/orders", to_batch=1, before=before, moves=moves, stateful=False)
    dry = rewind_card(ResultHeading("rewind", "orders", "ok", "would move 4", dry_run=True),
                      RewindResult(plan=plan, executed=False), max_rows=3)
    assert ["last committed batch", "3", "1"] in table(dry)
    assert "Would move 4 file(s) (2 in offsets/, 2 in commits/):" in dry
    assert "- `offsets/2`" in dry and "_1 more file(s) not shown" in dry
    done = rewind_card(ResultHeading("rewind", "orders", "ok", "moved 4"),
                       RewindResult(plan=plan, executed=True, backup_dir="/ckpt/orders.eos-backup-x",
                                    moved=tuple(m.path for m in moves)))
    assert "Moved 4 file(s)" in done and "Backup folder: `/ckpt/orders.eos-backup-x`" in done


def test_align_card_shows_offsets_and_markers_before_and_after_and_the_verdict_read_back() -> None:
    marker = BatchMarker(QUERY, 3).encode()
    rows = (AlignRow(tp=TopicPartition("orders", 0), before_offset=None, before_metadata=None, after_offset=40,
                     after_metadata=marker),
            AlignRow(tp=TopicPartition("orders", 1), before_offset=41, before_metadata=marker, after_offset=41,
                     after_metadata=marker))
    plan = AlignPlan(query_id=QUERY, batch_id=3, rows=rows, untouched=(), verdict=Verdict.NO_MARKER)
    after = VerificationReport(query_id=QUERY, last_committed=3, last_planned=3, overall=Verdict.NO_MARKER,
                               rows=(verdict_row(0, Verdict.NO_MARKER, None, None),
                                     verdict_row(1, Verdict.IN_SYNC, 41, 3)))
    card = align_card(ResultHeading("align", "orders", "ok", "dry run", dry_run=True), plan, after, executed=False)
    cells = table(card)
    assert cells[2] == ["orders-0", "-", "-", "40", "batch 3", "yes"]
    assert cells[3] == ["orders-1", "41", "batch 3", "41", "batch 3", "no"]
    assert "1 of 2 partition(s) would change" in card
    assert "Verification of the group as it is (read back from Kafka): NO_MARKER" in card
    assert ["orders-0", "40", "-", "-", "NO_MARKER"] in cells


def test_health_card_shows_the_findings_worst_first_and_the_partitions_that_matter() -> None:
    report = run([rich_sample(0), rich_sample(30)])
    heading = ResultHeading("health", "orders", "finding", f"pipeline 'orders' is {report.status.value}")
    card = health_card(heading, report)
    assert card.startswith("## health orders: FINDING")
    assert f"{report.status.value} at " in card
    assert "Findings, worst first:" in card
    first_finding = next(line for line in card.splitlines() if line.startswith("- UNHEALTHY [") or
                         line.startswith("- DEGRADED ["))
    assert first_finding.startswith(f"- {report.problems[0].status.value} [{report.problems[0].signal}]")
    assert "| partition" in card and "| lag status" in card
    assert "Last stable offset below the high watermark:" in card and "orders-out-0" in card
    assert "Open transactions under the prefix:" in card and "orders-eos-0" in card


def test_refusal_error_and_text_cards() -> None:
    refused = refusal_card("align", "orders", "the confirmation must read exactly 'align orders'; got 'x'",
                           phrase="align orders")
    assert refused.splitlines()[0] == "## align orders: REFUSED"
    assert "- Reason: the confirmation must read exactly 'align orders'; got 'x'" in refused
    assert "type exactly `align orders` in Confirmation" in refused
    error = error_card(ResultHeading("abort", "orders", "refused", "the job looks alive"),
                       UnsafeToActError("refusing to abort transactions: the job looks alive", fix="pass force"))
    assert "Error (UnsafeToActError): refusing to abort transactions" in error and "Fix: pass force" in error
    text = text_card(ResultHeading("preflight", "orders", "ok", "all rules pass"), "\n".join(f"line {i}" for i in
                                                                                             range(2000)))
    assert len(text) <= 3900 and "```" in text and "more line(s)" in text


def test_cards_hold_no_timestamps_of_their_own_making() -> None:
    # Same input, same card: a card is a pure function of the report (safe to compare across retries).
    assert verification_card(HEAD, behind_report()) == verification_card(HEAD, behind_report())
    assert dt.datetime.now(dt.UTC).isoformat()[:10] not in verification_card(HEAD, behind_report())
