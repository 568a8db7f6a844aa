"""The on-call's form and results, through the repo's ``eos_manual_recovery`` DAG in ``dag.test()``.

Against the real broker and a checkpoint in Spark's format (:mod:`tests.support.checkpointed_pipeline`),
with the run's params as the form sends them: verify runs with nothing typed in Confirmation; a
state-changing request with dry run off and a wrong confirmation goes to ``refused`` (the run
succeeds, every action is skipped, nothing changes, the reason is the refused task's log line,
``result`` and XCom); the right confirmation runs it. The result a person reads is the task's
``result`` rendered field (Rendered Templates tab): its text is asserted here.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from confluent_kafka import Producer

from airflow_provider_eos.core.markers import BatchMarker
from tests.support.checkpointed_pipeline import LAST_COMMITTED, PARTITIONS, CheckpointedPipeline, checkpointed_pipeline
from tests.support.checkpoints import date_batch_back, tree, write_checkpoint
from tests.support.dag_runner import DagRunResult, run_dag, run_dags

pytestmark = [pytest.mark.airflow, pytest.mark.integration]

ACTIONS = ("verify", "abort", "rewind", "align")


@pytest.fixture
def pipeline(tmp_path: Path, bootstrap: str, topic_factory) -> CheckpointedPipeline:
    return checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="ui")


def recover(pipeline: CheckpointedPipeline, tmp_path: Path, name: str, **conf: object) -> DagRunResult:
    """Trigger eos_manual_recovery for the pipeline with ``conf`` as the form sends it."""
    env = {"EOS_SPECS_DIR": str(pipeline.spec_path.parent)}
    return run_dag("eos_manual_recovery", {"pipeline": pipeline.spec.name, **conf}, tmp_path / f"{name}.json",
                   env=env, timeout_s=600)


def recover_in_a_row(pipeline: CheckpointedPipeline, tmp_path: Path,
                     requests: dict[str, dict[str, object]]) -> list[DagRunResult]:
    """:func:`recover` for each ``{name: conf}``, one run after the other in one child (``run_dags``): for runs
    with nothing done between them, which then pay Airflow's start in a child (~18 s) once."""
    env = {"EOS_SPECS_DIR": str(pipeline.spec_path.parent)}
    return run_dags([("eos_manual_recovery", {"pipeline": pipeline.spec.name, **conf}, tmp_path / f"{name}.json")
                     for name, conf in requests.items()], env=env, timeout_s=600)


def result_of(run: DagRunResult, task_id: str, outcome: str) -> str:
    """The ``result`` field a task rendered: the card headed ``## <task> <pipeline>: <OUTCOME>``."""
    cards = [fields.get("result", "") for fields in map(json.loads, run.rendered_fields)]
    found = [card for card in cards if card.startswith(f"## {task_id} ") and f": {outcome}" in card.splitlines()[0]]
    assert len(found) == 1, f"no {task_id} {outcome} card among {cards}"
    return found[0]


def table_rows(card: str) -> list[list[str]]:
    """The cells of the card's first Markdown table, header and rule left out."""
    lines = card.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("| "))
    table = []
    for line in lines[first:]:
        if not line.startswith("| "):
            break
        table.append(line)
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in table[2:]]


def test_verify_runs_without_a_confirmation_and_shows_the_verdict_table(
    pipeline: CheckpointedPipeline, airflow_home: Path, tmp_path: Path
) -> None:
    pipeline.commit_group(LAST_COMMITTED)

    # The form sends null for an empty Confirmation; the REST API may leave it out: both run.
    # Then an abort's dry run (below), which changes nothing: both runs in one child.
    run, scanned = recover_in_a_row(pipeline, tmp_path, {
        "verify": {"action": "verify", "dry_run": True, "confirmation": None}, "abort": {"action": "abort"}})

    assert run.state == "success", run.log[-6000:]
    assert run.states == {"validate_request": "success", "verify": "success", "refused": "skipped",
                          "abort": "skipped", "rewind": "skipped", "align": "skipped"}
    card = result_of(run, "verify", "OK")
    rows = table_rows(card)
    ends = pipeline.end_offsets(LAST_COMMITTED)
    assert rows == [[str(tp), str(offset), str(offset), str(LAST_COMMITTED), "IN_SYNC"] for tp, offset in
                    sorted(ends.items())]
    assert "| partition " in card and "| verdict" in card
    assert "Next step: Nothing to do: the sink group and the checkpoint agree" in card
    assert "Next step: None" not in card and "Next step: None" not in run.task_log("verify")
    assert max(len(line) for line in card.splitlines() if line.startswith("|")) < 100, "the table must fit a page"
    # The log opens with the card; kafka-python's INFO connection chatter stays out of it.
    verify_log = run.task_log("verify")
    assert "Result (also in this task's Rendered Templates tab" in verify_log
    assert run.xcoms["verify"]["overall"] == "IN_SYNC"

    # An abort's dry run reads the transactions with kafka-python, whose INFO lines stay out of the log.
    assert scanned.states["abort"] == "success", scanned.log[-6000:]
    abort_card = result_of(scanned, "abort", "OK")
    assert "(dry run: nothing changed)" in abort_card and f"`{pipeline.prefix}`: 0 transaction(s)" in abort_card
    abort_log = scanned.task_log("abort")
    assert "Result (also in this task's Rendered Templates tab" in abort_log
    assert "[kafka." not in abort_log, abort_log[-6000:]


def test_align_after_the_batch_in_flight_expired_runs_only_once_the_form_says_what_the_output_shows(
    pipeline: CheckpointedPipeline, airflow_home: Path, tmp_path: Path
) -> None:
    """Batch 4 in flight, planned 8 days ago, the group empty (every offset expired): Force does not answer."""
    in_flight = LAST_COMMITTED + 1
    write_checkpoint(pipeline.checkpoint, topic=pipeline.input_topic, partitions=PARTITIONS,
                     query_id=pipeline.query_id, offsets=[in_flight], commits=[])
    date_batch_back(pipeline.checkpoint, in_flight, 8 * 86_400_000)
    pipeline.age_commits()
    name = pipeline.spec.name
    assert set(pipeline.group().values()) == {None}

    unanswered = recover(pipeline, tmp_path, "unanswered", action="align", dry_run=False, force=True,
                         confirmation=f"align {name} force")
    assert unanswered.states["align"] == "failed", unanswered.log[-6000:]
    card = result_of(unanswered, "align", "REFUSED")
    assert f"refusing to align: batch {in_flight}'s offsets may have expired" in card, card
    assert "Batch in flight" in card and "--in-flight-batch written" in card, card
    assert set(pipeline.group().values()) == {None}

    done = recover(pipeline, tmp_path, "written", action="align", dry_run=False, confirmation=f"align {name}",
                   in_flight_batch="written")
    assert done.states["align"] == "success", done.log[-6000:]
    executed = done.xcoms["align"]
    assert executed["batch_id"] == in_flight and executed["in_flight_batch"] == "written", executed
    assert executed["verdict_after"] == "KAFKA_AHEAD_SAFE", executed
    marker = BatchMarker(pipeline.query_id, in_flight).encode()
    assert pipeline.group() == {tp: (o, marker) for tp, o in pipeline.end_offsets(in_flight).items()}
    assert f"told batch {in_flight} is in the output topic" in result_of(done, "align", "OK")


@pytest.mark.long  # CI: the same through the UI (tests/deployment/test_recovery_ui.py)
def test_wrong_confirmation_is_refused_before_anything_changes_and_the_right_one_runs(
    pipeline: CheckpointedPipeline, airflow_home: Path, tmp_path: Path
) -> None:
    name = pipeline.spec.name
    assert set(pipeline.group().values()) == {None}  # NO_MARKER: align would commit offsets/3

    refused = recover(pipeline, tmp_path, "refused", action="align", dry_run=False, confirmation=f"align {name}x")

    # Refused before any action ran: nothing changed, no task failed, the run is no incident.
    assert set(pipeline.group().values()) == {None}
    assert refused.state == "success", refused.log[-6000:]
    assert refused.states == {"validate_request": "success", "refused": "success", "verify": "skipped",
                              "abort": "skipped", "rewind": "skipped", "align": "skipped"}
    reason = refused.xcoms["refused"]
    assert f"must read exactly 'align {name}'" in reason and f"got 'align {name}x'" in reason
    card = result_of(refused, "align", "REFUSED")
    assert f"- Reason: {reason}" in card and f"type exactly `align {name}`" in card and "nothing was changed" in card
    refused_log = refused.task_log("refused")
    assert f"Refused, nothing was changed: {reason}" in refused_log
    assert "Traceback" not in refused.log and "AirflowFailException" not in refused.log

    # A dry run needs no confirmation and shows what the align would change.
    planned = recover(pipeline, tmp_path, "plan", action="align", dry_run=True, confirmation=f"align {name}x")
    assert planned.states["align"] == "success" and planned.states["refused"] == "skipped", planned.log[-6000:]
    assert set(pipeline.group().values()) == {None}
    plan = result_of(planned, "align", "OK")
    assert "(dry run: nothing changed)" in plan and f"{PARTITIONS} of {PARTITIONS} partition(s) would change" in plan
    assert [row[-1] for row in table_rows(plan)] == ["yes"] * PARTITIONS
    assert "Verification of the group as it is (read back from Kafka): NO_MARKER" in plan

    seen = planned.xcoms["align"]["fingerprint"]
    assert f"Plan fingerprint: `{seen}`" in plan

    # The query stopped long ago: the liveness check finds no recent commit and no open transaction.
    pipeline.age_commits()
    stale = recover(pipeline, tmp_path, "stale", action="align", dry_run=False, confirmation=f"align {name}",
                    expected_plan="0" * len(seen))
    assert stale.states["align"] == "failed", stale.log[-6000:]
    assert "Error (RepairError): the plan changed since the dry run" in result_of(stale, "align", "REFUSED")
    assert set(pipeline.group().values()) == {None}

    done = recover(pipeline, tmp_path, "align", action="align", dry_run=False, confirmation=f" align {name} ",
                   expected_plan=seen)

    assert done.state == "success", done.log[-6000:]
    assert done.states["align"] == "success" and done.states["refused"] == "skipped"
    assert done.xcoms["align"]["fingerprint"] == seen
    marker = BatchMarker(pipeline.query_id, LAST_COMMITTED).encode()
    assert pipeline.group() == {tp: (o, marker) for tp, o in pipeline.end_offsets(LAST_COMMITTED).items()}
    card = result_of(done, "align", "OK")
    assert "(dry run" not in card and "committed" in card
    assert "Verification afterwards (read back from Kafka): IN_SYNC" in card
    assert all(row[2] == "-" and row[4] == f"batch {LAST_COMMITTED}" for row in table_rows(card)), card


def test_a_rewind_of_a_pipeline_that_looks_alive_runs_only_forced_with_force_in_the_confirmation(
    pipeline: CheckpointedPipeline, airflow_home: Path, tmp_path: Path
) -> None:
    name = pipeline.spec.name
    pipeline.commit_group(1)  # KAFKA_BEHIND
    before = tree(pipeline.checkpoint)
    request = {"action": "rewind", "dry_run": False, "target_batch": 1}

    # Before each rewind that gets past the form the checkpoint is dated as committed just now: the query
    # looks alive. The forced request without "force" in its confirmation is refused by the form, before
    # anything is read or changed: it runs in the same child, right after the refused rewind.
    pipeline.age_commits(0)
    alive, unnamed = recover_in_a_row(pipeline, tmp_path, {
        "alive": {**request, "confirmation": f"rewind {name}"},
        "unnamed": {**request, "force": True, "confirmation": f"rewind {name}"}})
    assert alive.states["rewind"] == "failed" and alive.states["refused"] == "skipped", alive.log[-6000:]
    card = result_of(alive, "rewind", "REFUSED")
    assert "Error (UnsafeToActError): refusing to rewind the checkpoint" in card and "newest commit" in card, card
    assert unnamed.states["refused"] == "success" and unnamed.states["rewind"] == "skipped", unnamed.log[-6000:]
    assert f"Force is on, so the confirmation must read exactly 'rewind {name} force'" in unnamed.xcoms["refused"]
    # Neither changed the checkpoint (the second reached no action, so nothing the first did is undone).
    assert tree(pipeline.checkpoint) == before

    pipeline.age_commits(0)
    forced = recover(pipeline, tmp_path, "forced", **request, force=True, confirmation=f"rewind {name} force")
    assert forced.state == "success", forced.log[-6000:]
    result = forced.xcoms["rewind"]
    assert result["executed"] is True and result["safety"]["forced"] is True, result
    assert "forced despite signs that the pipeline is alive" in result_of(forced, "rewind", "OK")
    assert not (pipeline.checkpoint / "commits" / str(LAST_COMMITTED)).exists()


def test_health_check_shows_the_report_as_a_card_without_kafka_client_chatter(
    pipeline: CheckpointedPipeline, airflow_home: Path, tmp_path: Path
) -> None:
    pipeline.produce_input_of(LAST_COMMITTED)
    pipeline.commit_group(LAST_COMMITTED)

    # Three samples 1 s apart, not 10 ([eos] health_check_interval_s): the card is what this test reads.
    run = run_dag("eos_health_check", {}, tmp_path / "health.json", timeout_s=600,
                  env={"EOS_SPECS_DIR": str(pipeline.spec_path.parent), "EOS_HEALTH_CHECK_INTERVAL_S": "1"})

    # The listing first (the folder as the run finds it: this pipeline alone), then the one report.
    assert run.states.pop("pipelines_to_check") == "success", run.log[-6000:]
    assert run.xcoms["pipelines_to_check"] == [str(pipeline.spec_path)]
    (state,) = run.states.values()
    assert state in {"success", "failed"}, run.log[-6000:]
    report = run.xcoms["health_report[0]"]
    outcome = "OK" if report["is_healthy"] else "FINDING"
    assert state == ("success" if outcome == "OK" else "failed")
    cards = [fields.get("result", "") for fields in map(json.loads, run.rendered_fields)]
    (card,) = [c for c in cards if c.startswith(f"## health {pipeline.spec.name}: {outcome}")]
    assert f"{report['status']} at " in card and "verification: IN_SYNC" in card
    # The lag table: every input partition, its committed offset and marker.
    assert sorted((row[0], row[2], row[3]) for row in table_rows(card)) == sorted(
        (str(tp), str(offset), str(LAST_COMMITTED)) for tp, offset in pipeline.end_offsets(LAST_COMMITTED).items())
    # The mapped task's label in the grid names the pipeline and its status.
    with closing(sqlite3.connect(airflow_home / "airflow.db")) as db:
        (label,) = db.execute("SELECT rendered_map_index FROM task_instance WHERE dag_id = 'eos_health_check' "
                              "AND run_id = ? AND task_id = 'health_report'", (run.run_id,)).fetchone()
    assert label == f"{pipeline.spec.name}: {report['status']}"
    log = run.task_log("health_report")
    assert "Result (also in this task's Rendered Templates tab" in log
    assert "[kafka." not in log and "Returned value was" not in log, log[-6000:]


def test_a_refused_abort_says_why_and_a_forced_one_shows_what_it_aborted(
    pipeline: CheckpointedPipeline, airflow_home: Path, tmp_path: Path
) -> None:
    txn_id = f"{pipeline.prefix}-0"
    # Open for 10 minutes: the broker's default (1 minute) could abort it while a loaded machine runs the DAG.
    zombie = Producer({"bootstrap.servers": pipeline.bootstrap, "transactional.id": txn_id,
                       "transaction.timeout.ms": 600_000})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(pipeline.output_topic, key=b"k", value=b"never committed")
    assert zombie.flush(30) == 0
    confirmed = {"action": "abort", "dry_run": False, "confirmation": f"abort {pipeline.spec.name}"}
    forced_request = {**confirmed, "confirmation": f"abort {pipeline.spec.name} force"}

    # The transaction is young and the checkpoint committed recently: the job looks alive. The refused
    # request, then the forced one, nothing done between them: both runs in one child.
    refused, forced = recover_in_a_row(pipeline, tmp_path, {"alive": confirmed,
                                                            "forced": {**forced_request, "force": True}})

    assert refused.states["abort"] == "failed" and refused.states["refused"] == "skipped", refused.log[-6000:]
    card = result_of(refused, "abort", "REFUSED")
    assert "Error (UnsafeToActError): refusing to abort transactions" in card and "\nFix: " in card, card

    assert forced.state == "success", forced.log[-6000:]
    card = result_of(forced, "abort", "OK")
    (row,) = table_rows(card)
    assert row[0] == txn_id and row[-1] == "aborted", card
    assert "Signs that the job is alive (forced):" in card
