"""``eos verify``, ``eos abort`` and ``eos repair {rewind,align}``: recovery after a failure, from a terminal.

Each handler calls the use case the recovery operators call (:mod:`airflow_provider_eos.usecases`)
and prints its result (:mod:`airflow_provider_eos.cli.output`). Exit codes: ``0`` fine (verify:
``IN_SYNC`` or ``KAFKA_AHEAD_SAFE``, or nothing committed yet; abort: nothing of the pipeline
(left) open; a repair planned or done), ``1`` a finding that needs action (verify: any other
verdict; abort: transactions left open, or a dry run that found some; align: the group still
disagrees after committing), ``2`` an error (bad spec, unreachable broker, no checkpoint to
repair, a refused repair or abort).

Every action that changes something is a dry run unless ``--execute`` (abort, rewind and align
alike, as their operators unless ``dry_run=False``), and refuses while the pipeline looks alive
(a checkpoint commit within the quiet period, a transaction under the prefix younger than its
timeout) unless ``--force``; a repair executed with ``--expect-plan FP`` (the fingerprint its dry
run printed) refuses a plan that is no longer that one. In the ``eos_manual_recovery`` form the
same force is the Force switch, and the confirmation then reads ``<action> <pipeline> force``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from airflow_provider_eos.cli.output import add_pipeline_command, emit
from airflow_provider_eos.core.in_flight_batch import InFlightBatch

if TYPE_CHECKING:
    from airflow_provider_eos.usecases.clients import PipelineClients

__all__ = ["register"]


def _clients(args: argparse.Namespace) -> PipelineClients:
    from airflow_provider_eos.usecases.clients import PipelineClients

    return PipelineClients.from_spec_file(args.spec, connect_timeout_s=args.timeout)


def _verify(args: argparse.Namespace) -> int:
    from airflow_provider_eos.usecases.verify import verify

    return emit(args, verify(_clients(args)))


def _abort(args: argparse.Namespace) -> int:
    from airflow_provider_eos.usecases.abort import abort

    return emit(args, abort(_clients(args), force=args.force, execute=args.execute))


def _rewind(args: argparse.Namespace) -> int:
    from airflow_provider_eos.usecases.rewind import rewind

    return emit(args, rewind(_clients(args), to_batch=args.to_batch, execute=args.execute, force=args.force,
                             expected_plan=args.expect_plan))


def _align(args: argparse.Namespace) -> int:
    from airflow_provider_eos.usecases.align import align

    return emit(args, align(_clients(args), execute=args.execute, force=args.force, expected_plan=args.expect_plan,
                            in_flight_batch=args.in_flight_batch))


#: What --force overrides, the same words for every action (the form's Force help says the same).
_ALIVE = ("the pipeline looks alive (a checkpoint commit within the quiet period, or a transaction under the "
          "prefix younger than its timeout)")
_EXPECT_PLAN_HELP = ("the plan fingerprint the dry run printed: execute only if the plan is still that one (the "
                     "checkpoint and the group did not change since)")


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``abort``, ``verify`` and ``repair`` to the ``eos`` command line."""
    abort = add_pipeline_command(
        commands,
        "abort",
        _abort,
        summary="abort open (lingering and hanging) transactions under the pipeline's transactional id prefix",
        description="A dry run unless --execute, as every repair: scan and report what is open. With --execute, "
        "fence ongoing transactions under the prefix and abort hanging ones on the output and dead-letter "
        "partitions; ids outside the prefix are never touched. --execute refuses while the job looks alive "
        "unless --force. Exit 0: nothing (left) open; 1: something is (or, in a dry run, was found) open; "
        "2: error or refusal.",
    )
    actions = abort.add_mutually_exclusive_group()
    actions.add_argument("--execute", action="store_true",
                         help="fence and abort (default: dry run, scan and report only)")
    # The default now; still accepted so that scripts written when abort acted by default keep working.
    actions.add_argument("--dry-run", action="store_true", help=argparse.SUPPRESS)
    abort.add_argument("--force", action="store_true",
                       help=f"execute even though {_ALIVE}; nothing else is overridden")

    add_pipeline_command(
        commands,
        "verify",
        _verify,
        summary="compare the sink group's committed offsets and markers with the checkpoint",
        description="Exit 0 for IN_SYNC and KAFKA_AHEAD_SAFE (and for a pipeline that has committed nothing "
        "yet), 1 for KAFKA_BEHIND, NO_MARKER and DIVERGED, 2 on errors.",
    )

    repair = commands.add_parser(
        "repair", help="repairs, dry run unless --execute",
        description="Repairs are dry runs unless --execute. An execution refuses while the pipeline looks alive "
        "unless --force, and with --expect-plan FP refuses a plan other than the one its dry run showed. In the "
        "eos_manual_recovery form, Force on means the confirmation reads '<action> <pipeline> force'.",
    )
    repairs = repair.add_subparsers(dest="repair_command", required=True)
    rewind = add_pipeline_command(
        repairs,
        "rewind",
        _rewind,
        summary="rewind the checkpoint to batch K (later files move into a backup folder)",
        kafka_when="a dry run with --to-batch needs none",
        description="Moves offsets/ and commits/ (and state versions) after batch K into a timestamped "
        "backup folder next to the checkpoint; nothing is deleted, and the folder's EOS-REWIND.json lists what "
        "moved, written before each move. Stop the query first: --execute refuses while the pipeline looks alive "
        "unless --force. The dry run prints the plan fingerprint for --expect-plan.",
    )
    rewind.add_argument(
        "--to-batch", type=int, default=None,
        help="the batch K to rewind to (-1: before the first); default: the batch a KAFKA_BEHIND verdict names",
    )
    rewind.add_argument("--execute", action="store_true", help="move the files (default: dry run)")
    rewind.add_argument("--force", action="store_true",
                        help=f"execute even though {_ALIVE}; nothing else is overridden")
    rewind.add_argument("--expect-plan", default=None, metavar="FP", help=_EXPECT_PLAN_HELP)
    align = add_pipeline_command(
        repairs,
        "align",
        _align,
        summary="commit the checkpoint's offsets with batch markers to the sink group",
        description="Writes offsets/C with the marker of batch C to the group, then verifies what the group "
        "holds. Refused when verification says this would lose or duplicate output, and --execute refused while "
        "the pipeline looks alive, unless --force. When the batch in flight was planned longer ago than the "
        "brokers' offsets.retention.minutes and the group holds nothing, refused until --in-flight-batch says "
        "what the output topic shows of it (--force does not replace it). Stop the query first. The dry run prints "
        "the plan fingerprint for --expect-plan. Exit 1 when the group still disagrees after committing.",
    )
    align.add_argument("--execute", action="store_true", help="commit the offsets (default: dry run)")
    align.add_argument(
        "--force", action="store_true",
        help="align despite a verdict that makes aligning lose or duplicate output (KAFKA_BEHIND, KAFKA_AHEAD_SAFE, "
        f"DIVERGED, a partly written batch), and execute even though {_ALIVE}; nothing else is overridden",
    )
    align.add_argument("--expect-plan", default=None, metavar="FP", help=_EXPECT_PLAN_HELP)
    align.add_argument(
        "--in-flight-batch", default=None, choices=[answer.value for answer in InFlightBatch],
        help="only when verify names a batch in flight whose offsets may have expired: what the output topic "
        "(read_committed) shows of it. written: all its output is there; the group gets offsets/N with marker N "
        "and the replay skips it. not-written: none of it is; the group gets offsets/C with marker C and the "
        "replay writes it",
    )
