"""``eos abort``, ``eos verify`` and ``eos repair``: recovery after a failure, from a terminal.

Exit codes: ``0`` fine (verify: ``IN_SYNC`` or ``KAFKA_AHEAD_SAFE``; abort: nothing of the
pipeline left open), ``1`` a finding that needs action (verify: any other verdict; abort:
transactions left open, or a dry run that found some), ``2`` an error (bad spec, unreachable
broker, a refused repair or abort; the message says why and what to do).

Only the standard library is imported at module level: ``eos --help`` must stay fast, and the
Kafka and checkpoint modules load when a subcommand runs.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.errors import EosError

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.core.markers import CommittedOffsets
    from airflow_provider_eos.core.spec import PipelineSpec

EXIT_OK = 0
EXIT_FINDING = 1
EXIT_ERROR = 2

Handler = Callable[[argparse.Namespace], int]


def _emit(args: argparse.Namespace, text: str, data: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
    else:
        print(text)


def _json_errors(handler: Handler) -> Handler:
    """With ``--json``, report an :class:`EosError` as a JSON object on stdout (exit 2).

    Without ``--json`` the error propagates to ``eos``'s main, which prints it on stderr.
    """

    @functools.wraps(handler)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except EosError as exc:
            if not args.json:
                raise
            print(
                json.dumps(
                    {"error": type(exc).__name__, "message": exc.message, "fix": exc.fix}, indent=2, sort_keys=True
                )
            )
            return EXIT_ERROR

    return wrapper


def _load_spec(path: str) -> PipelineSpec:
    from airflow_provider_eos.core.spec import PipelineSpec

    return PipelineSpec.load(path)


def _existing_checkpoint(spec: PipelineSpec) -> CheckpointReader:
    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.core.errors import CheckpointError

    reader = CheckpointReader(spec.checkpoint_location)
    if not reader.exists():
        # "Nothing to verify" would read as success, and a mistyped location deserves an error.
        raise CheckpointError(
            f"no Spark checkpoint at {spec.checkpoint_location!r} (no metadata file, no offsets) "
            f"for pipeline {spec.name!r}",
            fix="check the spec's checkpoint_location; a pipeline that never ran has nothing to verify or repair",
        )
    return reader


def _confluent_admin(spec: PipelineSpec) -> AdminClient:
    from confluent_kafka.admin import AdminClient

    from airflow_provider_eos.kafka.client_config import admin_config

    return AdminClient(admin_config(spec))


def _committed(reader: CheckpointReader, admin: AdminClient, spec: PipelineSpec) -> CommittedOffsets:
    from airflow_provider_eos.kafka.group_offsets import sink_group_offsets

    return sink_group_offsets(admin, spec, reader)


# -- handlers ----------------------------------------------------------------------------------


@_json_errors
def _abort(args: argparse.Namespace) -> int:
    from airflow_provider_eos.kafka.transactions_admin import abort_open_transactions

    spec = _load_spec(args.spec)
    report = abort_open_transactions(spec, force=args.force, execute=not args.dry_run)
    _emit(args, report.render(), report.to_dict())
    return EXIT_OK if report.ok else EXIT_FINDING


@_json_errors
def _verify(args: argparse.Namespace) -> int:
    from airflow_provider_eos.core.verification import verify_checkpoint

    spec = _load_spec(args.spec)
    reader = _existing_checkpoint(spec)
    report = verify_checkpoint(reader, _committed(reader, _confluent_admin(spec), spec))
    _emit(args, report.render(), {"pipeline": spec.name, "group_id": spec.group_id, **report.to_dict()})
    return EXIT_OK if report.ok else EXIT_FINDING


@_json_errors
def _repair_rewind(args: argparse.Namespace) -> int:
    from airflow_provider_eos.core.repair import rewind

    spec = _load_spec(args.spec)
    result = rewind(_existing_checkpoint(spec), args.to_batch, execute=args.execute)
    _emit(args, result.render(), {"pipeline": spec.name, **result.to_dict()})
    return EXIT_OK


@_json_errors
def _repair_align(args: argparse.Namespace) -> int:
    from airflow_provider_eos.core.repair import plan_align
    from airflow_provider_eos.core.verification import verify_checkpoint
    from airflow_provider_eos.kafka.group_offsets import write_committed_offsets

    spec = _load_spec(args.spec)
    reader = _existing_checkpoint(spec)
    admin = _confluent_admin(spec)
    plan = plan_align(reader, _committed(reader, admin, spec), force=args.force)
    executed = bool(args.execute and not plan.is_noop)
    if executed:
        write_committed_offsets(admin, spec.group_id, plan.offsets_with_metadata())
    # Read back from Kafka rather than trusting the plan, so the "after" is what Kafka holds.
    after = verify_checkpoint(reader, _committed(reader, admin, spec))
    if executed:
        head = f"Committed {len(plan.rows)} offset(s) with marker of batch {plan.batch_id} to group {spec.group_id!r}."
    elif plan.is_noop:
        head = "Nothing to do: the group already holds the checkpoint's offsets and marker."
    else:
        head = "Dry run: nothing committed. Pass --execute to commit the 'after' column."
    text = "\n".join([head, "", plan.render(), "", "After (read back from Kafka):", after.render()])
    data = {"pipeline": spec.name, "group_id": spec.group_id, "executed": executed, **plan.to_dict()}
    data["after"] = after.to_dict()
    _emit(args, text, data)
    return EXIT_OK


# -- registration ------------------------------------------------------------------------------


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``abort``, ``verify`` and ``repair`` to the ``eos`` command line."""

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--spec", required=True, help="pipeline spec file (YAML or JSON)")
        parser.add_argument("--json", action="store_true", help="print the machine-readable result (JSON)")

    abort = commands.add_parser(
        "abort",
        help="abort open (lingering and hanging) transactions under the pipeline's transactional id prefix",
        description="Fence ongoing transactions under the prefix and abort hanging ones on the output and "
        "dead-letter partitions; ids outside the prefix are never touched. Refuses while the job looks "
        "alive unless --force. Exit 0: nothing left open; 1: something is (or, with --dry-run, was found) "
        "open; 2: error or refusal.",
    )
    common(abort)
    abort.add_argument("--force", action="store_true", help="act even if the job looks alive")
    abort.add_argument("--dry-run", action="store_true", help="scan and report only; change nothing")
    abort.set_defaults(handler=_abort)

    verify = commands.add_parser(
        "verify",
        help="compare the sink group's committed offsets and markers with the checkpoint",
        description="Exit 0 for IN_SYNC and KAFKA_AHEAD_SAFE, 1 for KAFKA_BEHIND, NO_MARKER and DIVERGED, "
        "2 on errors.",
    )
    common(verify)
    verify.set_defaults(handler=_verify)

    repair = commands.add_parser("repair", help="repairs, dry run unless --execute")
    repairs = repair.add_subparsers(dest="repair_command", required=True)
    rewind = repairs.add_parser(
        "rewind",
        help="rewind the checkpoint to batch K (later files move into a backup folder)",
        description="Moves offsets/ and commits/ (and state versions) after batch K into a timestamped "
        "backup folder next to the checkpoint; nothing is deleted. Stop the query first.",
    )
    common(rewind)
    rewind.add_argument("--to-batch", type=int, required=True, help="the batch K to rewind to (-1: before the first)")
    rewind.add_argument("--execute", action="store_true", help="move the files (default: dry run)")
    rewind.set_defaults(handler=_repair_rewind)
    align = repairs.add_parser(
        "align",
        help="commit the checkpoint's offsets with batch markers to the sink group",
        description="Writes offsets/C with the marker of batch C to the group. Refused when verification "
        "says this would lose or duplicate output, unless --force. Stop the query first.",
    )
    common(align)
    align.add_argument("--execute", action="store_true", help="commit the offsets (default: dry run)")
    align.add_argument("--force", action="store_true", help="align despite a verdict that forbids it")
    align.set_defaults(handler=_repair_align)

