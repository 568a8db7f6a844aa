"""The on-call form of eos_manual_recovery: its rules (core/recovery_request) and its params' JSON schema.

The schema is read the way Airflow 3.3's trigger form reads it: a field is *required* (red
asterisk; the Trigger button stays disabled while it is empty) when its schema has a ``type``
that does not include ``"null"`` (``isParamRequired.tsx``); a ``boolean`` or ``["boolean",
"null"]`` type is drawn as a switch; ``description_md`` is rendered as Markdown when
``description`` is empty.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.core.recovery_request import (
    ACTIONS,
    REFUSED,
    STATE_CHANGING,
    confirmation_help,
    confirmation_phrase,
    decide,
)

REPO = Path(__file__).resolve().parents[2]
PIPELINES = ("orders_enrich", "payments")
OK = {"pipeline": "orders_enrich", "action": "rewind", "dry_run": True, "target_batch": 3, "force": False,
      "confirmation": None}


def form_is_required(schema: dict[str, Any]) -> bool:
    """Airflow 3.3's ``isRequired`` (ui/src/components/FlexibleForm/isParamRequired.tsx)."""
    kind = schema.get("type")
    return bool(kind) and (not isinstance(kind, list) or "null" not in kind)


def form_field(schema: dict[str, Any]) -> str:
    """The type the form draws (FieldSelector.tsx's inferType): the first type that is not null."""
    kind = schema.get("type")
    return next((k for k in kind if k != "null"), "string") if isinstance(kind, list) else kind


# -- the rules ----------------------------------------------------------------------------------------


def test_read_only_and_dry_run_requests_run_without_a_confirmation() -> None:
    for action in ACTIONS:
        assert decide({**OK, "action": action, "target_batch": None}, PIPELINES).task_id == action
    verify = {"pipeline": "payments", "action": "verify", "dry_run": False}
    assert decide(verify, PIPELINES).task_id == "verify"
    # Empty switches (null) keep the safe values: dry run on.
    decision = decide({**OK, "dry_run": None}, PIPELINES)
    assert decision.dry_run is True and decision.task_id == "rewind" and not decision.refused


def test_a_state_changing_action_with_dry_run_off_needs_the_exact_phrase() -> None:
    for action in STATE_CHANGING:
        request = {**OK, "action": action, "dry_run": False, "target_batch": None}
        phrase = confirmation_phrase(action, "orders_enrich")
        assert phrase == f"{action} orders_enrich"
        for typed in (None, "", f"{action} payments", phrase.upper(), "yes"):
            decision = decide({**request, "confirmation": typed}, PIPELINES)
            assert decision.task_id == REFUSED and decision.refused, typed
            assert f"must read exactly {phrase!r}; got {(typed or '')!r}" in str(decision.reason)
            assert decision.phrase == phrase
        assert decide({**request, "confirmation": f"  {phrase} "}, PIPELINES).task_id == action
        assert decide({**request, "dry_run": "False", "confirmation": phrase}, PIPELINES).task_id == action


def test_with_force_on_the_confirmation_must_name_force() -> None:
    for action in STATE_CHANGING:
        request = {**OK, "action": action, "dry_run": False, "target_batch": None, "force": True}
        plain, forced = confirmation_phrase(action, "orders_enrich"), confirmation_phrase(action, "orders_enrich",
                                                                                         force=True)
        assert forced == f"{action} orders_enrich force"
        decision = decide({**request, "confirmation": plain}, PIPELINES)
        assert decision.task_id == REFUSED and decision.phrase == forced
        assert f"Force is on, so the confirmation must read exactly {forced!r}; got {plain!r}" in str(decision.reason)
        assert decide({**request, "confirmation": f" {forced} "}, PIPELINES).task_id == action
        assert decide({**request, "force": "true", "confirmation": forced}, PIPELINES).task_id == action
        # Typed and ticked must agree: a phrase naming force with Force off is refused as well.
        off = decide({**request, "force": False, "confirmation": forced}, PIPELINES)
        assert off.refused and f"must read exactly {plain!r}" in str(off.reason)
    # A dry run with Force on needs nothing typed: it changes nothing.
    assert decide({**OK, "force": True}, PIPELINES).task_id == "rewind"


@pytest.mark.parametrize(("change", "message"), [
    ({"pipeline": "nope"}, "pipeline 'nope' is unknown; choose one of ['orders_enrich', 'payments']"),
    ({"action": "delete"}, "action 'delete' is unknown"),
    ({"target_batch": -5}, "target_batch is -5"),
    ({"target_batch": True}, "target_batch is True"),
    ({"action": "align", "target_batch": 2}, "target_batch 2 only applies to rewind, not align"),
    ({"action": "abort", "target_batch": None, "expected_plan": "0123abcd4567"},
     "expected_plan only applies to rewind and align, not abort"),
    ({"in_flight_batch": "written"}, "in_flight_batch 'written' only applies to align, not rewind"),
    ({"action": "align", "target_batch": None, "in_flight_batch": "maybe"},
     "in_flight_batch is 'maybe', which is not an answer align knows; pass one of 'written', 'not-written'"),
])
def test_an_invalid_request_is_refused_with_what_to_change(change: dict[str, Any], message: str) -> None:
    decision = decide({**OK, **change}, PIPELINES)
    assert decision.task_id == REFUSED and message in str(decision.reason)


def test_align_takes_what_the_output_topic_shows_of_the_batch_in_flight() -> None:
    align = {**OK, "action": "align", "target_batch": None}
    for answer in ("written", "not-written", None, ""):
        assert decide({**align, "in_flight_batch": answer}, PIPELINES).task_id == "align", answer
    # Empty for the other actions, as the form leaves it.
    assert decide({**OK, "in_flight_batch": None}, PIPELINES).task_id == "rewind"


def test_the_help_lists_every_pipelines_phrases_and_stays_bounded() -> None:
    text = confirmation_help(PIPELINES)
    assert "- orders_enrich: **abort orders_enrich** · **rewind orders_enrich** · **align orders_enrich**" in text
    assert "- payments: **abort payments**" in text
    many = confirmation_help([f"p{i:03d}" for i in range(50)], max_pipelines=20)
    assert many.count("\n- p") == 20 and "and 30 more pipeline(s)" in many
    assert "(no pipeline spec found)" in confirmation_help([])
    assert "With **Force** on, add ` force`: e.g. **align orders_enrich force**" in text


# -- the DAG's params, as Airflow's form reads them -------------------------------------------------------


@pytest.fixture
def recovery_dag(airflow_home: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("EOS_SPECS_DIR", str(REPO / "dags" / "pipelines"))
    spec = importlib.util.spec_from_file_location("eos_manual_recovery_form", REPO / "dags" / "eos_manual_recovery.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.airflow
def test_only_pipeline_and_action_are_required_and_both_have_a_default(recovery_dag) -> None:
    params = recovery_dag.dag.params
    schemas = {name: params.get_param(name).schema for name in params}
    required = {name for name, schema in schemas.items() if form_is_required(schema)}
    assert required == {"pipeline", "action"}
    assert params["pipeline"] == "orders_enrich" and params["action"] == "verify"
    # The switches are still drawn as switches, with their safe defaults.
    assert form_field(schemas["dry_run"]) == "boolean" and params["dry_run"] is True
    assert form_field(schemas["force"]) == "boolean" and params["force"] is False
    assert form_field(schemas["confirmation"]) == "string" and params["confirmation"] is None
    assert form_field(schemas["expected_plan"]) == "string" and params["expected_plan"] is None
    # A select of align's two answers, empty by default (not told).
    assert form_field(schemas["in_flight_batch"]) == "string" and params["in_flight_batch"] is None
    assert schemas["in_flight_batch"]["enum"] == [None, "written", "not-written"]
    # The defaults validate as they are: the form's Trigger is enabled with nothing typed.
    params.validate()


@pytest.mark.airflow
def test_the_confirmation_help_shows_each_pipelines_exact_phrase(recovery_dag) -> None:
    param = recovery_dag.dag.params.get_param("confirmation")
    assert param.description is None  # else the form shows it instead of the Markdown
    for action in STATE_CHANGING:
        assert f"**{action} orders_enrich**" in param.schema["description_md"]


@pytest.mark.airflow
def test_the_force_help_says_exactly_what_it_overrides(recovery_dag) -> None:
    text = recovery_dag.dag.params.get_param("force").description
    for words in ("Overrides two refusals and nothing else", "abort, rewind and align", "the pipeline looks alive",
                  "a checkpoint commit within the quiet period", "younger than its timeout", "align only",
                  "KAFKA_BEHIND, KAFKA_AHEAD_SAFE, DIVERGED", "'<action> <pipeline> force'",
                  "The plan fingerprint is still checked"):
        assert words in text, words


@pytest.mark.airflow
def test_the_branch_follows_the_action_or_refused(recovery_dag) -> None:
    # The DAG file is a caller of the factory; the form's check is the factory module's.
    from airflow_provider_eos.dags.manual_recovery import validate_request
    from airflow_provider_eos.spec_registry import discover_specs

    specs = discover_specs(REPO / "dags" / "pipelines")
    assert validate_request({**OK}, specs) == "rewind"
    assert validate_request({**OK, "dry_run": False, "confirmation": "rewind orders_enrich"}, specs) == "rewind"
    assert validate_request({**OK, "dry_run": False}, specs) == REFUSED
    downstream = recovery_dag.dag.get_task("validate_request").downstream_task_ids
    assert downstream == {*ACTIONS, REFUSED}
    assert not hasattr(recovery_dag.dag.get_task(REFUSED), "kafka_conn_id")
