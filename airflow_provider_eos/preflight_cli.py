"""``eos preflight``: the pre-flight catalog (DESIGN.md section 4) outside Airflow.

Exit codes: ``0`` no rule of severity ERROR failed (warnings and "not checked" are printed
but do not fail), ``1`` at least one ERROR, ``2`` the pre-flight could not run (invalid spec,
unreachable cluster; the message says why and what to do).

Only the standard library is imported at module level: ``eos --help`` must stay fast.
"""

from __future__ import annotations

import argparse
import json

from airflow_provider_eos.core.errors import EosError

EXIT_OK = 0
EXIT_ERRORS = 1
EXIT_FAILED_TO_RUN = 2


def _preflight(args: argparse.Namespace) -> int:
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.kafka.cluster_facts import run_preflight

    try:
        spec = PipelineSpec.load(args.spec)
        report = run_preflight(spec, specs_dir=args.specs_dir, master=args.master)
    except EosError as exc:
        if not args.json:
            # eos's main prints it on stderr and exits 2.
            raise
        print(json.dumps({"error": type(exc).__name__, "message": exc.message, "fix": exc.fix}, indent=2))
        return EXIT_FAILED_TO_RUN
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        print(report.render())
    return EXIT_OK if report.ok else EXIT_ERRORS


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``preflight`` to the ``eos`` command line."""
    parser = commands.add_parser(
        "preflight",
        help="check a pipeline's spec, Kafka cluster, topics, sink group and checkpoint before it starts",
        description="Run the pre-flight catalog (codes EOS1xx timeouts, EOS2xx Kafka cluster and topics, EOS3xx "
        "Spark and checkpoint, EOS4xx naming and ownership) against the live cluster. Exit 0: no errors "
        "(warnings allowed); 1: at least one error; 2: the pre-flight could not run.",
    )
    parser.add_argument("--spec", required=True, help="pipeline spec file (YAML or JSON)")
    parser.add_argument("--json", action="store_true", help="print the machine-readable report (JSON)")
    parser.add_argument(
        "--specs-dir",
        default=None,
        help="folder of all pipeline specs, to check that prefix, group and checkpoint are not shared "
        "(without it those rules are not checked)",
    )
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master URL the job will run on, to check the checkpoint storage "
        "(default: spark.master of the spec's spark_conf; without either that rule is not checked)",
    )
    parser.set_defaults(handler=_preflight)
