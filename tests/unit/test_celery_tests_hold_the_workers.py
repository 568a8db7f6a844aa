"""Every test of the shared Celery deployment holds its workers (``worker_hosts``) while it runs.

CI's two pytest-xdist workers take ``tests/deployment_celery``'s tests in turn. One of them SIGKILLs
worker-1 and stops its old host at the end; another runs its pipeline's driver task on worker-1 and
its recovery on worker-2 for minutes. Without the workers' lock the second could run during the
first's kill and lose its driver's task, its heartbeats, then its driver. Checked by collection
alone (``--fixtures-per-test``): nothing starts.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "tests/deployment_celery"


def _fixtures_per_test() -> dict[str, set[str]]:
    """Each test of the package (the long ones too) and the fixtures it uses, as pytest resolves them."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--fixtures-per-test", "-q", "-o", "addopts=", "-p", "no:randomly",
         "-p", "no:cacheprovider", PACKAGE],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    used: dict[str, set[str]] = {}
    test = None
    for line in done.stdout.splitlines():
        header = re.match(r"^-+ fixtures used by (\S+) -+$", line)
        if header:
            test = header[1]
            used[test] = set()
        elif test is not None and (fixture := re.match(r"^(\w+) -- ", line)):
            used[test].add(fixture[1])
    return used


def test_every_celery_deployment_test_holds_the_workers_lock() -> None:
    used = _fixtures_per_test()
    # The package's four: the cross-worker pipeline's two, the SIGKILLed worker's, the two hosts'.
    assert len(used) >= 4, used
    assert not [test for test, fixtures in used.items() if "worker_hosts" not in fixtures], used
