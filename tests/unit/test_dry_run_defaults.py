"""Every state-changing command, use case and operator is a dry run unless told; the DAGs say which they want.

Abort used to act by default while rewind and align did not: a person who learned one of them
by heart would be surprised by the other. Now all three act only with ``--execute`` (the CLI),
``execute=True`` (the use cases) or ``dry_run=False`` (the operators), and every DAG factory
(:mod:`airflow_provider_eos.dags`, which the ``dags/`` files call) states its choice for each of them.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from airflow_provider_eos.cli.main import build_parser

# The DAG factories the dags/ files call: the operators are built there.
FACTORIES = Path(__file__).resolve().parents[2] / "airflow_provider_eos" / "dags"
STATE_CHANGING = ("abort", "repair rewind", "repair align")
OPERATORS = ("AbortOpenTransactionsOperator", "RewindCheckpointOperator", "AlignGroupOffsetsOperator")


@pytest.mark.parametrize("command", STATE_CHANGING)
def test_each_command_is_a_dry_run_unless_execute(command: str) -> None:
    parser = build_parser()
    assert parser.parse_args([*command.split(), "--spec", "f.yaml"]).execute is False
    assert parser.parse_args([*command.split(), "--spec", "f.yaml", "--execute"]).execute is True


def test_abort_still_takes_dry_run_from_scripts_written_when_it_acted_by_default(capsys) -> None:
    parser = build_parser()
    assert parser.parse_args(["abort", "--spec", "f.yaml", "--dry-run"]).execute is False
    with pytest.raises(SystemExit):
        parser.parse_args(["abort", "--spec", "f.yaml", "--dry-run", "--execute"])
    assert "not allowed with" in capsys.readouterr().err


def test_each_use_case_is_a_dry_run_unless_execute() -> None:
    from airflow_provider_eos.usecases.abort import abort, abort_open_transactions
    from airflow_provider_eos.usecases.align import align
    from airflow_provider_eos.usecases.rewind import rewind

    for use_case in (abort, abort_open_transactions, rewind, align):
        assert inspect.signature(use_case).parameters["execute"].default is False, use_case.__name__


def test_each_operator_is_a_dry_run_unless_dry_run_false() -> None:
    from airflow_provider_eos.operators import recovery

    for name in OPERATORS:
        operator = getattr(recovery, name)
        assert inspect.signature(operator.__init__).parameters["dry_run"].default is True, name


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) in OPERATORS]


def test_every_dag_states_its_choice_for_each_state_changing_task() -> None:
    found = {}
    for dag_file in sorted(FACTORIES.glob("*.py")):
        for call in _calls(ast.parse(dag_file.read_text(encoding="utf-8"))):
            keywords = {k.arg: k.value for k in call.keywords}
            task = ast.literal_eval(keywords["task_id"])
            assert "dry_run" in keywords, f"{dag_file.name}: task {task!r} leaves dry_run to the default"
            value = keywords["dry_run"]
            found[(dag_file.name, task)] = ast.literal_eval(value) if isinstance(value, ast.Constant) else "form"
    # The pipeline's automatic recovery acts; the on-call form follows its Dry run switch.
    assert found == {
        ("pipeline.py", "abort_lingering"): False, ("pipeline.py", "recover_abort"): False,
        ("manual_recovery.py", "abort"): "form", ("manual_recovery.py", "rewind"): "form",
        ("manual_recovery.py", "align"): "form",
    }
