"""``eos verify``, ``eos abort`` and ``eos repair {rewind,align}``: recovery after a failure, from a terminal.

Each handler calls the use case the recovery operators call (:mod:`airflow_provider_eos.usecases`)
and prints its result (:mod:`airflow_provider_eos.cli.output`). Exit codes: ``0`` fine (verify:
``IN_SYNC`` or ``KAFKA_AHEAD_SAFE``, or nothing committed yet; abort: nothing of the pipeline
left open; a repair planned or done), ``1`` a finding that needs action (verify: any other
verdict; abort: transactions left open, or a dry run that found some; align: the group still
disagrees after committing), ``2`` an error (bad spec, unreachable broker, no checkpoint to
repair, a refused repair or abort).
"""

from __future__ import annotations

import argparse

from airflow_provider_eos.cli.output import add_pipeline_command, emit

__all__ = ["register"]


def _verify(args: argparse.Namespace) -> int:
    from airflow_provider_eos.usecases.clients import PipelineClients
    from airflow_provider_eos.usecases.verify import verify

    return emit(args, verify(PipelineClients.from_spec_file(args.spec)))


def _abort(args: argparse.Namespace) -> int:
    from airflow_provider_eos.usecases.abort import abort
    from airflow_provider_eos.usecases.clients import PipelineClients

    return emit(args, abort(PipelineClients.from_spec_file(args.spec), force=args.force, execute=not args.dry_run))


def _rewind(args: argparse.Namespace) -> int:
    from airflow_provider_eos.usecases.clients import PipelineClients
    from airflow_provider_eos.usecases.rewind import rewind

    return emit(args, rewind(PipelineClients.from_spec_file(args.spec), to_batch=args.to_batch, execute=args.execute))


def _align(args: argparse.Namespace) -> int:
    from airflow_provider_eos.usecases.align import align
    from airflow_provider_eos.usecases.clients import PipelineClients

    return emit(args, align(PipelineClients.from_spec_file(args.spec), execute=args.execute, force=args.force))


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``abort``, ``verify`` and ``repair`` to the ``eos`` command line."""
    abort = add_pipeline_command(
        commands,
        "abort",
        _abort,
        summary="abort open (lingering and hanging) transactions under the pipeline's transactional id prefix",
        description="Fence ongoing transactions under the prefix and abort hanging ones on the output and "
        "dead-letter partitions; ids outside the prefix are never touched. Refuses while the job looks "
        "alive unless --force. Exit 0: nothing left open; 1: something is (or, with --dry-run, was found) "
        "open; 2: error or refusal.",
    )
    abort.add_argument("--force", action="store_true", help="act even if the job looks alive")
    abort.add_argument("--dry-run", action="store_true", help="scan and report only; change nothing")

    add_pipeline_command(
        commands,
        "verify",
        _verify,
        summary="compare the sink group's committed offsets and markers with the checkpoint",
        description="Exit 0 for IN_SYNC and KAFKA_AHEAD_SAFE (and for a pipeline that has committed nothing "
        "yet), 1 for KAFKA_BEHIND, NO_MARKER and DIVERGED, 2 on errors.",
    )

    repair = commands.add_parser("repair", help="repairs, dry run unless --execute")
    repairs = repair.add_subparsers(dest="repair_command", required=True)
    rewind = add_pipeline_command(
        repairs,
        "rewind",
        _rewind,
        summary="rewind the checkpoint to batch K (later files move into a backup folder)",
        description="Moves offsets/ and commits/ (and state versions) after batch K into a timestamped "
        "backup folder next to the checkpoint; nothing is deleted. Stop the query first.",
    )
    rewind.add_argument(
        "--to-batch", type=int, default=None,
        help="the batch K to rewind to (-1: before the first); default: the batch a KAFKA_BEHIND verdict names",
    )
    rewind.add_argument("--execute", action="store_true", help="move the files (default: dry run)")
    align = add_pipeline_command(
        repairs,
        "align",
        _align,
        summary="commit the checkpoint's offsets with batch markers to the sink group",
        description="Writes offsets/C with the marker of batch C to the group, then verifies what the group "
        "holds. Refused when verification says this would lose or duplicate output, unless --force. Stop the "
        "query first. Exit 1 when the group still disagrees after committing.",
    )
    align.add_argument("--execute", action="store_true", help="commit the offsets (default: dry run)")
    align.add_argument("--force", action="store_true", help="align despite a verdict that forbids it")
