"""``eos health``: the supervision report the health sensor computes, from a terminal.

Calls :func:`airflow_provider_eos.usecases.health.health`. Exit codes: ``0`` healthy (HEALTHY,
or DEGRADED unless ``--strict``), ``1`` not (UNHEALTHY; DEGRADED with ``--strict``), ``2`` an
error (bad spec, unreachable broker, an unknown threshold; the message says why and what to do).
"""

from __future__ import annotations

import argparse

from airflow_provider_eos.cli.output import add_pipeline_command, emit, seconds

__all__ = ["register"]


def _threshold(text: str) -> tuple[str, int]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip().isdecimal():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=INTEGER, e.g. stop_after_ms=60000")
    return key.strip(), int(value)


def _health(args: argparse.Namespace) -> int:
    from airflow_provider_eos.usecases.clients import PipelineClients
    from airflow_provider_eos.usecases.health import health

    result = health(
        PipelineClients.from_spec_file(args.spec, connect_timeout_s=args.timeout),
        samples=args.samples,
        interval_s=args.interval,
        thresholds=dict(args.threshold or []) or None,
        strict=args.strict,
    )
    return emit(args, result)


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``health`` to the ``eos`` command line."""
    health = add_pipeline_command(
        commands,
        "health",
        _health,
        summary="report a pipeline's health: commit age, lag rules, hanging and lingering transactions, verification",
        description="Samples the pipeline (input LSO vs the sink group's offsets, LSO vs high watermark of "
        "every partition, transactions under the prefix, the checkpoint's newest commit, verification) and "
        "evaluates the lag rules OK/WARN/STALL/STOP/REWIND over the samples. Exit 0: healthy (DEGRADED "
        "included unless --strict); 1: unhealthy; 2: error.",
    )
    health.add_argument(
        "--samples", type=int, default=1, help="samples to take (default 1; lag trends need 3 or more)"
    )
    health.add_argument("--interval", type=seconds, default=5.0, help="seconds between samples (default 5)")
    health.add_argument(
        "--threshold",
        action="append",
        type=_threshold,
        metavar="NAME=MS",
        help="override a threshold derived from the spec or set in its health_thresholds (warn_after_ms, "
        "stop_after_ms, hang_after_ms, input_hang_after_ms, lingering_after_ms, min_samples); repeatable",
    )
    health.add_argument("--strict", action="store_true", help="exit 1 for DEGRADED too")
