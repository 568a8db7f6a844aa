"""CPU seconds per test: the test's process and the children it waited for (Spark drivers, DAG runs, CLIs).

The suite is CPU-bound on two cores, so a test's wall time says as much about the other worker as
about itself; its CPU seconds say what it costs. Services shared by the run (brokers, clusters, the
Airflow deployment) are not anyone's children here and are left out. Each worker writes
``artifacts/test-cpu/<worker>.json`` ({nodeid: [cpu_s, wall_s]}); ``python -m tests.support.cpu_accounting``
prints the largest.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ARTIFACTS = Path(os.environ.get("EOS_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "artifacts")) / "test-cpu"


def _cpu_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class CpuAccounting:
    """A pytest plugin: measures each test's setup, call and teardown together."""

    def __init__(self, worker: str) -> None:
        self.worker = worker
        self.spent: dict[str, list[float]] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        cpu, wall = _cpu_s(), time.monotonic()
        yield
        self.spent[item.nodeid] = [round(_cpu_s() - cpu, 2), round(time.monotonic() - wall, 2)]

    def pytest_sessionfinish(self) -> None:
        if self.spent:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (ARTIFACTS / f"{self.worker}.json").write_text(json.dumps(self.spent, indent=0))


def main(argv: list[str]) -> int:
    """Print the tests that cost the most CPU, with their wall time, and the totals."""
    spent: dict[str, list[float]] = {}
    for path in sorted(ARTIFACTS.glob("*.json")):
        spent.update(json.loads(path.read_text()))
    top = int(argv[0]) if argv else 30
    print(f"{'cpu s':>8} {'wall s':>8}  test")
    for nodeid, (cpu, wall) in sorted(spent.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{cpu:8.1f} {wall:8.1f}  {nodeid}")
    print(f"{sum(c for c, _ in spent.values()):8.1f} {sum(w for _, w in spent.values()):8.1f}  all {len(spent)} tests")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
