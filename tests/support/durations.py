"""The suite's recorded test durations (``tests/durations.json``): the order tests start in and each one's timeout;
and the scopes its pytest-xdist scheduler hands out whole (:func:`make_scheduler`).

Two pytest-xdist workers on two cores finish together only if the longest tests start first (a
40-second unit module is easy to fit in at the end; a seven-minute chaos test is not). The record is
seconds per test (setup, call and teardown added up) from a run's ``--durations=0`` report; refresh
it with ``make durations`` after adding or reshaping slow tests (the tests it does not run keep their
record). A test without a record starts as long as its module's longest record, and a module
without any as :data:`UNRECORDED_MODULE_S` (a unit module as 0): taken as 0, new and newly
parametrized integration tests (a 36-second Prometheus scrape among them) started last, and one
worker ran them alone at the end of CI's run.

A test's timeout is a multiple of its record, never below :data:`DEFAULT_TIMEOUT_S`: a hang fails in
minutes with the test's name, while a machine several times slower than the one that recorded it
still passes (CI machines have been seen at 2.7 times).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

DURATIONS_FILE = Path(__file__).resolve().parents[1] / "durations.json"
DEFAULT_TIMEOUT_S = 300
#: What a module without any record is taken to last when the start order is made (outside tests/unit/).
UNRECORDED_MODULE_S = 30.0
SLOWER_MACHINE_FACTOR = 5
_LINE = re.compile(r"^\s*(?P<seconds>[0-9.]+)s (?:setup|call|teardown)\s+(?P<nodeid>\S.*?)\s*$")


def load(path: Path = DURATIONS_FILE) -> dict[str, float]:
    """Seconds per test node id; empty if nothing was recorded."""
    if not path.exists():
        return {}
    return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}


def from_pytest_report(text: str) -> dict[str, float]:
    """Seconds per node id from pytest's ``--durations=0`` lines (setup, call and teardown added up)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            nodeid = match["nodeid"]
            found[nodeid] = round(found.get(nodeid, 0.0) + float(match["seconds"]), 2)
    return found


def timeout_for(recorded_s: float | None) -> int:
    """The timeout of a test recorded at ``recorded_s`` seconds (``DEFAULT_TIMEOUT_S`` without a record)."""
    if recorded_s is None:
        return DEFAULT_TIMEOUT_S
    return max(DEFAULT_TIMEOUT_S, math.ceil(recorded_s * SLOWER_MACHINE_FACTOR / 60) * 60)


#: Test packages whose modules share a package-scoped fixture (an Airflow deployment, the YARN MiniCluster):
#: their modules run as one group, so the fixture is set up once per worker and stopped once they are done.
PACKAGE_GROUPS = ("tests/deployment/", "tests/deployment_celery/", "tests/yarn/")


#: Tests that hold a fixture one test at a time (an ``flock``), by package or module: each set is one scope
#: of the suite's scheduler (:func:`make_scheduler`), so one pytest-xdist worker runs it in a row, where a
#: worker that took one of them while the other ran its sibling sat idle on the lock (145 s before one
#: Celery test in CI). The Celery deployment's workers (``tests/deployment_celery/conftest.py``) and the
#: broker the silent-broker tests pause (``pausable_secured_kafka``).
ONE_AT_A_TIME = {
    "tests/deployment_celery/": "celery-workers",
    "tests/integration/test_silent_broker.py": "pausable-secured-kafka",
    "tests/integration/test_acl_probe_no_answer.py": "pausable-secured-kafka",
}


def scope_of(nodeid: str) -> str:
    """The scheduler's unit for a test: its one-at-a-time group, else the test alone."""
    return next((group for prefix, group in ONE_AT_A_TIME.items() if nodeid.startswith(prefix)), nodeid)


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's ``loadscope`` with :func:`scope_of` for scopes: the tests arrive in the start order
    (``--no-loadscope-reorder``) and a worker with at most two queued takes the next scope.

    Not ``--dist loadgroup`` with ``xdist_group`` marks: under pytest 9 its node id suffix does not take,
    and every marked test ran as if unmarked.
    """
    from xdist.scheduler import LoadScopeScheduling

    class OneAtATimeScopes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return OneAtATimeScopes(config, log)


def module_of(nodeid: str) -> str:
    """The test file of a node id."""
    return nodeid.split("::", 1)[0]


def group_of(nodeid: str) -> str:
    """The group a test runs with: its package if listed in :data:`PACKAGE_GROUPS`, else its module."""
    module = module_of(nodeid)
    return next((package for package in PACKAGE_GROUPS if module.startswith(package)), module)


def estimate(nodeid: str, recorded: dict[str, float]) -> float:
    """A test's duration for the start order: its record; else its module's longest record (a test
    renamed or parametrized since keeps its module's place); else :data:`UNRECORDED_MODULE_S`, or 0
    for a unit module."""
    if nodeid in recorded:
        return recorded[nodeid]
    module = module_of(nodeid)
    in_module = [seconds for other, seconds in recorded.items() if module_of(other) == module]
    if in_module:
        return max(in_module)
    return 0.0 if module.startswith("tests/unit/") else UNRECORDED_MODULE_S


def start_order(nodeids: list[str], recorded: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Each test's sort key: its group's longest recorded test, then its module's (both descending), so
    the longest tests start as early as possible (a test without a record: :func:`estimate`).

    Groups and modules stay whole (their package- and module-scoped fixtures are set up once per
    worker); a stable sort on this key keeps pytest's order inside a module.
    """
    longest: dict[str, float] = {}
    for nodeid in nodeids:
        seconds = estimate(nodeid, recorded)
        for unit in {group_of(nodeid), module_of(nodeid)}:
            longest[unit] = max(longest.get(unit, 0.0), seconds)
    return {nodeid: (-longest[group_of(nodeid)], -longest[module_of(nodeid)]) for nodeid in nodeids}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.support.durations PYTEST_OUTPUT (a run with --durations=0)", file=sys.stderr)
        return 2
    found = from_pytest_report(Path(argv[0]).read_text(errors="replace"))
    if not found:
        print(f"{argv[0]} has no --durations=0 lines: run pytest with --durations=0", file=sys.stderr)
        return 1
    merged = merge(load(), found, DURATIONS_FILE.parents[1])
    DURATIONS_FILE.write_text(json.dumps(merged, indent=0) + "\n")
    print(f"{len(found)} tests measured ({sum(found.values()):.0f} s); {len(merged)} recorded in {DURATIONS_FILE}")
    return 0


def merge(recorded: dict[str, float], measured: dict[str, float], repo: Path) -> dict[str, float]:
    """The record after a run: its measurements, and the earlier records of the tests it did not run.

    A run of ``make test`` leaves out the long proofs (``make test-long``), whose records still set
    their timeouts; a record whose module is gone is dropped, also a measurement of a module renamed
    since the run (a CI log of an older commit).
    """
    merged = {**recorded, **measured}
    return dict(sorted((nodeid, seconds) for nodeid, seconds in merged.items() if (repo / module_of(nodeid)).exists()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
