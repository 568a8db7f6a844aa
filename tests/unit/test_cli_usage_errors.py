"""Bad command-line input gets a usage error naming the value, also as one JSON object with ``--json``."""

from __future__ import annotations

import json

import pytest

from airflow_provider_eos.cli import preflight as preflight_cli
from airflow_provider_eos.cli.main import main
from airflow_provider_eos.cli.output import ExitCode


def run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exited.value.code), out, err


@pytest.mark.parametrize(("option", "value"), [
    ("--timeout", "-1"), ("--timeout", "nan"), ("--timeout", "0"), ("--timeout", "7200"), ("--timeout", "abc"),
    ("--interval", "-1"), ("--interval", "inf"),
])
def test_a_bad_number_of_seconds_is_a_usage_error_naming_it(capsys, option, value) -> None:
    code, out, err = run(capsys, "health", "--spec", "x.yaml", option, value)
    assert code == ExitCode.ERROR and out == ""
    assert f"argument {option}: '{value}' is not" in err


def test_with_json_a_usage_error_is_one_json_object_on_stdout(capsys) -> None:
    code, out, _ = run(capsys, "health", "--spec", "x.yaml", "--timeout", "-1", "--json")
    assert code == ExitCode.ERROR
    error = json.loads(out)
    assert error["error"] == "UsageError" and "argument --timeout: '-1'" in error["message"]
    assert error["fix"] == "see `eos health --help`"
    code, out, _ = run(capsys, "preflight", "--json")
    assert code == ExitCode.ERROR and "required: --spec" in json.loads(out)["message"]


def test_ctrl_c_is_reported_not_a_traceback(capsys, monkeypatch) -> None:
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(preflight_cli, "_preflight", interrupted)  # the handler build_parser registers
    assert main(["preflight", "--spec", "x.yaml", "--json"]) == 130
    assert json.loads(capsys.readouterr().out)["error"] == "Interrupted"
    assert main(["preflight", "--spec", "x.yaml"]) == 130
    assert "interrupted (Ctrl-C)" in capsys.readouterr().err
