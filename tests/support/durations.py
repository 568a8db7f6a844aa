"""The suite's recorded test durations (``tests/durations.json``): the order tests start in and each one's timeout.

Two pytest-xdist workers on two cores finish together only if the longest tests start first (a
40-second unit module is easy to fit in at the end; a seven-minute chaos test is not). The record is
seconds per test (setup, call and teardown added up) from a run's ``--durations=0`` report; refresh
it with ``make durations`` after adding or reshaping slow tests. A test without a record is taken as
short.

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

DURATIONS_FILE = Path(__file__).resolve().parents[1] / "durations.json"
DEFAULT_TIMEOUT_S = 300
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


def module_order(nodeids: list[str], recorded: dict[str, float]) -> dict[str, float]:
    """Each module's sort key: its longest recorded test, so that test starts as early as possible.

    Modules stay whole (their module-scoped fixtures are set up once per worker); they are ordered
    by this key, longest first.
    """
    longest: dict[str, float] = {}
    for nodeid in nodeids:
        module = nodeid.split("::", 1)[0]
        longest[module] = max(longest.get(module, 0.0), recorded.get(nodeid, 0.0))
    return longest


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.support.durations PYTEST_OUTPUT (a run with --durations=0)", file=sys.stderr)
        return 2
    found = from_pytest_report(Path(argv[0]).read_text(errors="replace"))
    if not found:
        print(f"{argv[0]} has no --durations=0 lines: run pytest with --durations=0", file=sys.stderr)
        return 1
    DURATIONS_FILE.write_text(json.dumps(dict(sorted(found.items())), indent=0) + "\n")
    print(f"{len(found)} tests, {sum(found.values()):.0f} s recorded in {DURATIONS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
