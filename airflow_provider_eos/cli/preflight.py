"""``eos preflight``: the pre-flight catalog (docs/preflight-rules.md) outside Airflow.

Calls :func:`airflow_provider_eos.usecases.preflight.preflight`, the function the pre-flight
operator calls. The folder of every pipeline's spec (for the sharing rules) is ``--specs-dir``,
else ``$EOS_SPECS_DIR`` as for the DAGs; without either those rules are "not checked". Exit
codes: ``0`` no rule of severity ERROR failed (warnings and "not checked" are printed but do not
fail), ``1`` at least one ERROR, ``2`` the pre-flight could not run (invalid spec, unreachable
cluster; the message says why and what to do).
"""

from __future__ import annotations

import argparse

from airflow_provider_eos.cli.output import add_pipeline_command, emit

__all__ = ["register"]


def _preflight(args: argparse.Namespace) -> int:
    from airflow_provider_eos.spec_registry import configured_specs_directory
    from airflow_provider_eos.usecases.clients import PipelineClients
    from airflow_provider_eos.usecases.preflight import preflight

    result = preflight(
        PipelineClients.from_spec_file(args.spec, connect_timeout_s=args.timeout),
        specs_dir=args.specs_dir or configured_specs_directory(),
        master=args.master,
    )
    return emit(args, result)


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``preflight`` to the ``eos`` command line."""
    parser = add_pipeline_command(
        commands,
        "preflight",
        _preflight,
        summary="check a pipeline's spec, Kafka cluster, topics, sink group and checkpoint before it starts",
        description="Run the pre-flight catalog (codes EOS1xx timeouts, EOS2xx Kafka cluster and topics, EOS3xx "
        "Spark and checkpoint, EOS4xx naming and ownership, EOS5xx security: the job principal's ACLs) against "
        "the live cluster. Exit 0: no errors (warnings allowed); 1: at least one error; 2: the pre-flight could "
        "not run.",
    )
    parser.add_argument(
        "--specs-dir",
        default=None,
        help="folder of all pipeline specs, to check that prefix, group and checkpoint are not shared "
        "(default: $EOS_SPECS_DIR, the folder the DAGs read; without either those rules are not checked)",
    )
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master URL the job will run on, to check the checkpoint storage "
        "(default: spark.master of the spec's spark_conf; without either that rule is not checked)",
    )
