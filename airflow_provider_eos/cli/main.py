"""The ``eos`` command line: the parser, and the dispatch to the command groups.

Every command module registers its subcommands here and is a thin shell: the local development
commands (:mod:`~airflow_provider_eos.cli.devstack`) drive the devstack and spark-submit, the
others (:mod:`~airflow_provider_eos.cli.preflight`, :mod:`~airflow_provider_eos.cli.health`,
:mod:`~airflow_provider_eos.cli.recovery`) call the same use-case functions the Airflow
operators call (:mod:`airflow_provider_eos.usecases`) and print the result through
:mod:`~airflow_provider_eos.cli.output`; progress (:mod:`airflow_provider_eos.core.progress`) goes to
stderr. Heavy modules are imported when a command runs, so
``eos --help`` imports neither Airflow, PySpark nor a Kafka client.
"""

from __future__ import annotations

import argparse
import logging
import platform
import sys
from collections.abc import Sequence

from airflow_provider_eos import __version__
from airflow_provider_eos.cli import acls, airflow, devstack, health, package, preflight, recovery
from airflow_provider_eos.cli.output import EosArgumentParser, emit_crash, emit_error, emit_interrupt, json_requested
from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.progress import PROGRESS_LOGGER, show_on

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The parser of every ``eos`` command; each sets ``handler`` to the function that runs it."""
    parser = EosArgumentParser(
        prog="eos",
        description="Exactly-once Kafka -> Spark -> Kafka pipelines: run, verify, recover. Exit codes of every "
        "command: 0 ok, 1 a finding that needs action, 2 an error (the message says why and what to do).",
    )
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {__version__} (airflow-provider-eos, Python {platform.python_version()})")
    commands = parser.add_subparsers(dest="command", required=True)
    for group in (devstack, airflow, package, recovery, preflight, health, acls):
        group.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``eos`` command and return its exit code (see :class:`~airflow_provider_eos.cli.output.ExitCode`)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    # A usage error is reported before any Namespace exists: the parser reads this to answer in JSON too.
    asked = json_requested.set("--json" in arguments)
    try:
        args = build_parser().parse_args(arguments)
    finally:
        json_requested.reset(asked)
    # What a command waits on (retries, builds, a cluster starting) shows on stderr; stdout keeps the result.
    shown = show_on(sys.stderr)
    try:
        return int(args.handler(args) or 0)
    except EosError as exc:
        return int(emit_error(args, exc))
    except KeyboardInterrupt:
        return emit_interrupt(args)
    except Exception as exc:
        # Python's own exit code for an uncaught exception is 1, which every command uses for a
        # finding: a script that branches on 1 would take a crash for a verdict.
        return int(emit_crash(args, exc))
    finally:
        logging.getLogger(PROGRESS_LOGGER).removeHandler(shown)


if __name__ == "__main__":
    sys.exit(main())
