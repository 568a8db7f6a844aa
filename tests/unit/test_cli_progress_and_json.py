"""What a person waiting sees (progress on stderr), and ``--json`` on every command that reports.

The progress lines are real: a real retry policy waiting on a condition, a real subprocess
under a heartbeat, the real ``eos`` command printing them on stderr while stdout keeps the
result. The JSON reports come from the real devstack and Airflow status commands on a state
folder where nothing runs.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_provider_eos.cli.main import build_parser, main
from airflow_provider_eos.cli.output import ExitCode
from airflow_provider_eos.core.progress import PROGRESS_LOGGER, Cadence, heartbeat
from airflow_provider_eos.core.retry import RetryPolicy

# Commands that print no report of their own: `run` is the pipeline itself (spark-submit's output).
NOT_REPORTS = {("run",)}


def leaf_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from leaf_commands(child, (*path, name))
            return
    yield path, parser


def test_every_command_that_reports_takes_json() -> None:
    without = [" ".join(path) for path, parser in leaf_commands(build_parser())
               if path not in NOT_REPORTS and "--json" not in parser._option_string_actions]
    assert without == []


def test_a_cadence_is_quiet_first_then_speaks_now_and_then() -> None:
    cadence = Cadence(first_s=2, every_s=10)
    said = [t for t in (0.1, 1.9, 2.0, 2.5, 11.9, 12.0, 13, 22.5) if cadence.due(t)]
    assert said == [2.0, 12.0, 22.5]


def test_a_retry_that_keeps_waiting_says_so(caplog: pytest.LogCaptureFixture) -> None:
    policy = RetryPolicy(waiting_for="the coordinator", timeout_s=2.6, first_delay_s=0.2, max_delay_s=0.2)
    with caplog.at_level(logging.INFO, logger=PROGRESS_LOGGER):
        settled = policy.poll(lambda: False, until=bool, what="reading the group")
    assert not settled.settled
    lines = [r.getMessage() for r in caplog.records if r.name == PROGRESS_LOGGER]
    assert len(lines) == 1, lines  # one line after two seconds, not one per 0.2 s attempt
    assert lines[0].startswith("reading the group: waiting for the coordinator (2 s so far, attempt ")
    assert "up to 2.6 s" in lines[0]


def test_a_quick_retry_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    answers = iter([False, False, True])
    policy = RetryPolicy(waiting_for="x", timeout_s=5, first_delay_s=0.01, max_delay_s=0.01)
    with caplog.at_level(logging.INFO, logger=PROGRESS_LOGGER):
        assert policy.poll(lambda: next(answers), until=bool, what="w").settled
    assert [r for r in caplog.records if r.name == PROGRESS_LOGGER] == []


def test_a_heartbeat_says_what_runs_that_it_still_runs_and_when_it_is_done(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=PROGRESS_LOGGER), \
            heartbeat("installing the requirements", every_s=0.2, detail="log: /tmp/x.log"):
        subprocess.run([sys.executable, "-c", "import time; time.sleep(0.7)"], check=True)
    lines = [r.getMessage() for r in caplog.records if r.name == PROGRESS_LOGGER]
    assert lines[0] == "installing the requirements; log: /tmp/x.log ..."
    assert any(line.startswith("still installing the requirements (") for line in lines[1:-1]), lines
    assert lines[-1].startswith("installing the requirements: done in ")


def test_a_failed_step_does_not_say_done(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=PROGRESS_LOGGER), pytest.raises(RuntimeError), \
            heartbeat("packing", every_s=5):
        raise RuntimeError("venv-pack failed")
    assert [r.getMessage() for r in caplog.records if r.name == PROGRESS_LOGGER] == ["packing ..."]


def test_the_eos_command_shows_progress_on_stderr_and_keeps_stdout_for_the_result(tmp_path: Path) -> None:
    # The real command line (its main, its stderr handler) around a handler that waits on something long.
    script = (
        "import sys, time\n"
        "from airflow_provider_eos.cli import devstack\n"
        "from airflow_provider_eos.cli.main import main\n"
        "from airflow_provider_eos.core.progress import heartbeat\n"
        "def handler(args):\n"
        "    with heartbeat('waiting on something long', every_s=0.2):\n"
        "        time.sleep(0.5)\n"
        "    print('the result')\n"
        "    return 0\n"
        "devstack._jars = handler  # registered when main() builds the parser\n"
        "sys.exit(main(['jars']))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the result\n"
    assert done.stderr.splitlines()[0] == "eos: waiting on something long ..."
    assert "eos: still waiting on something long (" in done.stderr


def test_devstack_and_airflow_status_report_as_json(tmp_path: Path, capsys) -> None:
    state = tmp_path / "devstack"
    for command in (["devstack", "status"], ["airflow", "status"]):
        code = main([*command, "--state-dir", str(state), "--json"])
        report = json.loads(capsys.readouterr().out)
        assert code == ExitCode.FINDING and report["outcome"] == "finding", report  # nothing runs there
    code = main(["devstack", "status", "--state-dir", str(state), "--json"])
    assert json.loads(capsys.readouterr().out) == {
        "kafka": None, "spark": None, "yarn": None, "state_dir": str(state), "outcome": "finding"}
    assert code == ExitCode.FINDING


def test_the_text_report_prints_each_line_as_it_comes(tmp_path: Path, capsys) -> None:
    started = time.monotonic()
    code = main(["devstack", "status", "--state-dir", str(tmp_path / "devstack")])
    assert code == ExitCode.FINDING and time.monotonic() - started < 30
    assert capsys.readouterr().out.startswith("not running (state dir ")
