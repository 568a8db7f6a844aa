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
import contextvars
import enum
import json
import math
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from airflow_provider_eos.core.errors import EosError
    from airflow_provider_eos.usecases.result import Outcome, UseCaseResult

__all__ = [
    "DEFAULT_KAFKA_TIMEOUT_S",
    "MAX_KAFKA_TIMEOUT_S",
    "EosArgumentParser",
    "ExitCode",
    "Report",
    "add_json_flag",
    "add_kafka_timeout",
    "add_pipeline_command",
    "add_spec_argument",
    "emit",
    "emit_crash",
    "emit_error",
    "emit_interrupt",
    "json_requested",
    "kafka_timeout",
    "print_json",
    "seconds",
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


#: The longest wait a Kafka client takes (librdkafka's request timeout is at most an hour).
MAX_KAFKA_TIMEOUT_S = 3600.0


def seconds(text: str) -> float:
    """An option's number of seconds (argparse ``type``): finite and not negative, else a usage error naming it."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds of 0 or more")
    return value


def kafka_timeout(text: str) -> float:
    """``--timeout``'s seconds (argparse ``type``): above 0, at most :data:`MAX_KAFKA_TIMEOUT_S`."""
    value = seconds(text)
    if not 0 < value <= MAX_KAFKA_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"{text!r} is not a timeout above 0 and at most {MAX_KAFKA_TIMEOUT_S:g} s")
    return value


def add_kafka_timeout(parser: argparse.ArgumentParser, *, when: str = "") -> None:
    """``--timeout SECONDS``: how long a command waits for any Kafka broker to answer before it fails.

    :param when: when the command talks to Kafka at all, if not always (e.g. "with --apply").
    """
    parser.add_argument(
        "--timeout", type=kafka_timeout, default=DEFAULT_KAFKA_TIMEOUT_S, metavar="SECONDS",
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


#: Whether the command line being parsed asked for ``--json`` (set by the ``eos`` entry point).
json_requested: contextvars.ContextVar[bool] = contextvars.ContextVar("json_requested", default=False)

#: The exit code of a command stopped by Ctrl-C (the shell's 128 + SIGINT).
INTERRUPTED_EXIT_CODE = 130


class EosArgumentParser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors are also one JSON object on stdout when ``--json`` was asked for.

    Subcommands' parsers are of the same class (``add_subparsers`` makes them so).
    """

    def error(self, message: str) -> NoReturn:
        if json_requested.get():
            print_json({"error": "UsageError", "message": f"{self.prog}: {message}",
                        "fix": f"see `{self.prog} --help`"})
        super().error(message)


def emit_interrupt(args: argparse.Namespace) -> int:
    """Report a command stopped by Ctrl-C: with ``--json`` one JSON object, else a line on stderr."""
    message = "interrupted (Ctrl-C) before the command finished"
    fix = "run it again; what it changed so far is what its own report (or `--json` of a rerun) shows"
    if getattr(args, "json", False):
        print_json({"error": "Interrupted", "message": message, "fix": fix})
    else:
        print(f"error: {message}\nFix: {fix}", file=sys.stderr)
    return INTERRUPTED_EXIT_CODE


def emit_crash(args: argparse.Namespace, exc: Exception) -> ExitCode:
    """Report an exception no command foresaw as an error: the traceback on stderr, then as :func:`emit_error`."""
    traceback.print_exception(exc, file=sys.stderr)
    if getattr(args, "json", False):
        print_json({"error": type(exc).__name__, "message": str(exc), "fix": CRASH_FIX})
    else:
        print(f"error: {type(exc).__name__}: {exc}\nFix: {CRASH_FIX}", file=sys.stderr)
    return ExitCode.ERROR
