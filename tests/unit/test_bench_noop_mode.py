"""The benchmark-only noop mode (``bench/noop_sink.py``, a sink plug-in): accepted by ``eos run``, not by the spec."""

from __future__ import annotations

import pytest

from airflow_provider_eos.cli.main import build_parser
from airflow_provider_eos.core.spec import Mode
from bench.noop_sink import BENCH_NOOP_MODE, NoopSink


def test_eos_run_accepts_noop_and_a_master() -> None:
    args = build_parser().parse_args(["run", "--spec", "p.yaml", "--mode", BENCH_NOOP_MODE, "--master", "local[1]"])
    assert (args.mode, args.master) == ("noop", "local[1]")


def test_noop_is_not_a_delivery_mode_of_the_spec() -> None:
    with pytest.raises(ValueError):
        Mode(BENCH_NOOP_MODE)


def test_noop_sink_has_what_the_job_loop_reads() -> None:
    sink = NoopSink()
    assert sink.stats == {} and sink.in_batch is False
    sink.close()
