"""What every ``eos`` command prints and how it exits: one exit-code definition, one ``--json`` format.

Exit codes, the same for every command:

- ``0`` (:attr:`ExitCode.OK`): nothing needs doing;
- ``1`` (:attr:`ExitCode.FINDING`): the command ran and found something that needs action (a
  verdict, a failed pre-flight rule, an unhealthy pipeline, transactions left open, a broker
  that is not running);
- ``2`` (:attr:`ExitCode.ERROR`): the command could not run or refused (invalid spec,
  unreachable broker, a refused repair or abort); the message says why and what to do. A crash
  on an exception no command foresaw is an error too, with its traceback on stderr.

With ``--json`` the result, or the error as ``{"error", "message", "fix"}``, goes to stdout as one
JSON object; without it, the text goes to stdout and errors to stderr as ``error: ...`` with the
fix. Only the standard library is imported here: ``eos --help`` must stay fast.
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_eos.core.errors import EosError
    from airflow_provider_eos.usecases.result import Outcome, UseCaseResult

__all__ = [
    "DEFAULT_KAFKA_TIMEOUT_S",
    "ExitCode",
    "Report",
    "add_json_flag",
    "add_kafka_timeout",
    "add_pipeline_command",
    "add_spec_argument",
    "emit",
    "emit_crash",
    "emit_error",
    "print_json",
]

#: ``--timeout``'s default: the same as :data:`airflow_provider_eos.kafka.reachability.DEFAULT_CONNECT_TIMEOUT_S`
#: (a test holds them equal; importing it here would import confluent-kafka for ``eos --help``).
DEFAULT_KAFKA_TIMEOUT_S = 5.0

#: The fix of an error no command foresaw.
CRASH_FIX = ("this is an error eos does not expect: the traceback on stderr says where it happened; "
             "report it with the command you ran")


class ExitCode(enum.IntEnum):
    """The exit status of every ``eos`` command."""

    OK = 0
    FINDING = 1
    ERROR = 2

    @classmethod
    def of(cls, outcome: Outcome) -> ExitCode:
        """The exit code of a use case's outcome."""
        return {"ok": cls.OK, "finding": cls.FINDING}.get(outcome.value, cls.ERROR)


def add_spec_argument(parser: argparse.ArgumentParser) -> None:
    """``--spec FILE``, the pipeline every use-case command works on."""
    parser.add_argument("--spec", required=True, help="pipeline spec file (YAML or JSON)")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """``--json``: print the machine-readable result (or error) instead of the text."""
    parser.add_argument("--json", action="store_true", help="print the machine-readable result (JSON)")


def add_lifecycle_commands(
    subcommands: argparse._SubParsersAction,
    commands: Sequence[tuple[str, Callable[[argparse.Namespace], int], str]],
    state_dir_help: str,
) -> dict[str, argparse.ArgumentParser]:
    """A local service's ``up``, ``down`` and ``status``: each with ``--state-dir`` and ``--json``.

    :param subcommands: the service command's subcommands.
    :param commands: ``(name, handler, help)`` per subcommand; the help is its ``--help``'s description too.
    :return: the subcommands' parsers by name, for the options only one of them takes.
    """
    made = {}
    for name, handler, help_text in commands:
        sub = subcommands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--state-dir", default=None, help=state_dir_help)
        add_json_flag(sub)
        sub.set_defaults(handler=handler)
        made[name] = sub
    return made


def add_kafka_timeout(parser: argparse.ArgumentParser, *, when: str = "") -> None:
    """``--timeout SECONDS``: how long a command waits for any Kafka broker to answer before it fails.

    :param when: when the command talks to Kafka at all, if not always (e.g. "with --apply").
    """
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_KAFKA_TIMEOUT_S, metavar="SECONDS",
        help=f"seconds to wait for any Kafka broker to answer before failing (default {DEFAULT_KAFKA_TIMEOUT_S:g})"
        + (f"; {when}" if when else ""),
    )


def add_pipeline_command(
    commands: argparse._SubParsersAction,
    name: str,
    handler: Callable[[argparse.Namespace], int],
    *,
    summary: str,
    description: str,
    kafka_when: str = "",
) -> argparse.ArgumentParser:
    """Add a command that runs a use case on one pipeline: ``--spec FILE``, ``--json`` and ``--timeout``.

    :param summary: the command's line in ``eos --help``.
    :param description: the command's own ``--help`` text.
    :param kafka_when: when the use case talks to Kafka, if not always (``--timeout``'s help says so).
    :return: the command's parser, for its own arguments.
    """
    parser = commands.add_parser(name, help=summary, description=description)
    add_spec_argument(parser)
    add_json_flag(parser)
    add_kafka_timeout(parser, when=kafka_when)
    parser.set_defaults(handler=handler)
    return parser


def print_json(data: dict[str, Any]) -> None:
    """Print one JSON object, keys sorted, values JSON cannot express as strings."""
    print(json.dumps(data, indent=2, sort_keys=True, default=str))


def emit(args: argparse.Namespace, result: UseCaseResult[Any]) -> ExitCode:
    """Print a use case's result as text or (``--json``) as its data; return its exit code."""
    if getattr(args, "json", False):
        print_json(result.data())
    else:
        from airflow_provider_eos.core.presentation import result_text  # not at the top: ``eos --help`` stays fast

        print(result_text(result))
    return ExitCode.of(result.outcome)


class Report:
    """A command's own report (devstack, Airflow, package, jars): text lines as they come, or one JSON object.

    Without ``--json`` each :meth:`line` prints at once (a long ``devstack up`` shows the broker
    before the clusters start); with it nothing prints until :meth:`finish` prints :attr:`data`
    with the ``outcome`` (``ok`` or ``finding``), as a use case's result does.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.as_json = bool(getattr(args, "json", False))
        self.data: dict[str, Any] = {}

    def line(self, text: str) -> None:
        """One line of the text report (nothing with ``--json``)."""
        if not self.as_json:
            print(text, flush=True)

    def finish(self, code: ExitCode = ExitCode.OK) -> ExitCode:
        """Print the JSON object (with ``--json``) and return ``code``."""
        if self.as_json:
            print_json({**self.data, "outcome": "ok" if code is ExitCode.OK else "finding"})
        return code


def emit_error(args: argparse.Namespace, exc: EosError) -> ExitCode:
    """Report an error: the JSON error object on stdout with ``--json``, else ``error: ...`` on stderr."""
    if getattr(args, "json", False):
        print_json({"error": type(exc).__name__, "message": exc.message, "fix": exc.fix})
    else:
        print(f"error: {exc}", file=sys.stderr)
    return ExitCode.ERROR


def emit_crash(args: argparse.Namespace, exc: Exception) -> ExitCode:
    """Report an exception no command foresaw as an error: the traceback on stderr, then as :func:`emit_error`."""
    traceback.print_exception(exc, file=sys.stderr)
    if getattr(args, "json", False):
        print_json({"error": type(exc).__name__, "message": str(exc), "fix": CRASH_FIX})
    else:
        print(f"error: {type(exc).__name__}: {exc}\nFix: {CRASH_FIX}", file=sys.stderr)
    return ExitCode.ERROR
