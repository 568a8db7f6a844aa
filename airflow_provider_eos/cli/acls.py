"""``eos acls``: print (and, as an administrator, apply) the least-privilege ACLs of a role on a pipeline.

Calls :func:`airflow_provider_eos.usecases.acls.acls`. ``--apply`` authenticates with the
librdkafka settings in ``--admin-config`` (a JSON file such as the secured devstack's
``client.config``), never with the spec's. The other pipelines come from ``--specs-dir``, else
``$EOS_SPECS_DIR`` (as for ``eos preflight``): a transactional-id pattern that covers another
pipeline's ids is a finding. Exit codes: ``0`` printed or applied, ``1`` the set covers another
pipeline's transactional ids (never applied), ``2`` an error (bad spec, principal, role or admin
config, a refused apply; the message says what to do).
"""

from __future__ import annotations

import argparse

from airflow_provider_eos.cli.output import add_pipeline_command, emit

__all__ = ["register"]


def _acls(args: argparse.Namespace) -> int:
    from airflow_provider_eos.core.spec import PipelineSpec, load_specs
    from airflow_provider_eos.spec_registry import configured_specs_directory
    from airflow_provider_eos.usecases.acls import acls

    specs_dir = args.specs_dir or configured_specs_directory()
    result = acls(PipelineSpec.load(args.spec), args.principal, args.role, admin_config=args.admin_config,
                  apply=args.apply, hanging_abort=args.hanging_abort, broker_configs=args.broker_configs,
                  other_specs=None if specs_dir is None else load_specs(specs_dir), connect_timeout_s=args.timeout)
    return emit(args, result)


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``acls`` to the ``eos`` command line."""
    parser = add_pipeline_command(
        commands,
        "acls",
        _acls,
        summary="print or apply the minimal Kafka ACLs of a role (job, recovery, health) on a pipeline",
        description="Print the least-privilege ACL set of a role on the pipeline: resource type, pattern, name, "
        "operation and why each is needed. With --apply, create the missing ones through the admin API, "
        "authenticated by --admin-config (not the spec's settings); applying twice changes nothing. A set whose "
        "PREFIXED transactional-id pattern covers another pipeline's ids ('orders-' covers 'orders-eu-0') is "
        "reported and never applied. Exit 0: printed or applied; 1: the set covers another pipeline's ids; 2: error.",
        kafka_when="only --apply talks to Kafka",
    )
    parser.add_argument("--principal", required=True, help="the principal to grant, e.g. User:orders-job")
    parser.add_argument("--role", required=True, help="job, recovery or health")
    parser.add_argument("--apply", action="store_true", help="create the ACLs (needs --admin-config)")
    parser.add_argument(
        "--hanging-abort", action="store_true",
        help="recovery only: also grant what aborting a hanging transaction needs (ALTER on the cluster, which "
        "also allows creating ACLs: an administrator's right); without it hanging transactions are reported",
    )
    parser.add_argument(
        "--broker-configs", action="store_true",
        help="health only: also grant DESCRIBE_CONFIGS on the cluster (read-only: every broker's non-secret "
        "settings), so that health judges a pinned input partition by the brokers' transaction.max.timeout.ms; "
        "without it, by Kafka's default",
    )
    parser.add_argument(
        "--specs-dir",
        default=None,
        help="folder of all pipeline specs, to check that no transactional-id pattern covers another pipeline's "
        "ids (default: $EOS_SPECS_DIR; without either that is not checked)",
    )
    parser.add_argument(
        "--admin-config",
        default=None,
        metavar="FILE",
        help="JSON file of librdkafka settings of a principal allowed to create ACLs (ALTER on the cluster), "
        "e.g. the client.config the secured devstack prints",
    )
