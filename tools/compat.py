"""``make compat`` (``python -m tools.compat``): the broker-version matrix, written to docs/compatibility.md.

For each tested Kafka version (:data:`~airflow_provider_eos.devstack.jars.KAFKA_VERSIONS`, or
``--versions``) it runs the tests marked ``compat`` (long ones included) against brokers of that
version (``EOS_TEST_KAFKA_VERSION``), reads pytest's JUnit report, and writes one row per capability
and one column per version: pass, fail or skip, with the seconds it took. The protocol each broker ran
(transactions v1 or v2, its ``metadata.version``) heads its column, read from a broker of that version.
CI runs the same tests on the oldest version (``make test-compat``), not this.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_eos.devstack.jars import KAFKA_VERSIONS

REPO = Path(__file__).resolve().parents[1]
TABLE = REPO / "docs" / "compatibility.md"
PAGE_HEAD = "# Compatibility\n\nThe tested versions of what the product runs with, one matrix per part.\n\n"

#: Capability -> the compat tests that prove it (pytest node ids without parameters match every parameter).
CAPABILITIES: dict[str, tuple[str, ...]] = {
    "exactly-once after a driver crash, executor writers (JVM)":
        ("tests/chaos/test_executor_crash_points.py::test_driver_killed_after_some_partitions_committed",),
    "exactly-once after a driver crash, driver writer":
        ("tests/chaos/test_crash_points.py::test_crash_at_named_point_then_restart_is_exactly_once",),
    "recovery: a SIGKILLed writer's lingering transaction aborted":
        ("tests/integration/test_transactions_recovery.py::"
         "test_sigkilled_transaction_is_lingering_then_aborted_and_read_committed_moves_on",),
    "recovery: hanging transactions found and aborted (KIP-664)":
        ("tests/integration/test_transactions_recovery.py::"
         "test_hanging_transactions_found_like_kafkas_tool_ours_aborted_foreign_left",),
    "recovery from Airflow: abort refused while alive, fenced when forced":
        ("tests/dags/test_recovery_operators.py::"
         "test_abort_refuses_while_the_job_looks_alive_and_fences_the_open_transaction_when_forced",),
    "health: a lingering transaction reported":
        ("tests/integration/test_health_live.py::"
         "test_open_transaction_under_the_prefix_older_than_the_timeout_is_lingering",),
    "pre-flight: a good spec passes on the cluster's real configs (EOS213-EOS215)":
        ("tests/integration/test_preflight_live.py::test_a_good_spec_passes_with_the_clusters_real_configs",),
    "the product's librdkafka producers run transactions v1":
        ("tests/integration/test_transactions_v2.py::test_the_products_librdkafka_producers_run_v1_on_every_broker",),
    "a v2 client's epoch bump per transaction; recovery fences it":
        ("tests/integration/test_transactions_v2.py::"
         "test_a_v2_client_has_its_epoch_bumped_per_transaction_and_recovery_still_fences_it",),
    "a v2 producer id rollover at the epoch limit; recovery fences it":
        ("tests/integration/test_transactions_v2.py::"
         "test_a_v2_epoch_at_its_limit_rolls_into_a_new_producer_id_which_recovery_still_fences",),
}


@dataclass(frozen=True)
class Outcome:
    """One test case of one version's run."""

    nodeid: str
    status: str  # pass, fail, skip
    seconds: float


def _nodeid(case: ET.Element) -> str:
    path = case.get("classname", "").replace(".", "/")
    return f"{path}.py::{case.get('name')}"


def outcomes_of(junit: Path) -> list[Outcome]:
    """Every test case of pytest's JUnit report."""
    found = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        status = "pass"
        if case.find("failure") is not None or case.find("error") is not None:
            status = "fail"
        elif case.find("skipped") is not None:
            status = "skip"
        found.append(Outcome(_nodeid(case), status, float(case.get("time", "0"))))
    return found


def run_version(version: str, workers: str, *, long: bool) -> tuple[list[Outcome], int]:
    """The compat tests on brokers of ``version`` (``long``: the long ones too): outcomes, pytest's exit code."""
    with tempfile.TemporaryDirectory(prefix=f"eos-compat-{version}-") as folder:
        junit = Path(folder) / "junit.xml"
        marker = "compat" if long else "compat and not long"
        command = [sys.executable, "-m", "pytest", "-q", "-m", marker, "-n", workers, "--dist", "load",
                   f"--junitxml={junit}", "-p", "no:cacheprovider"]
        code = subprocess.run(command, cwd=REPO, env={**os.environ, "EOS_TEST_KAFKA_VERSION": version},
                              check=False).returncode
        return (outcomes_of(junit) if junit.exists() else []), code


def broker_protocol(version: str) -> str:
    """What a broker of ``version`` announces about transactions (one started for the question)."""
    from airflow_provider_eos.devstack.broker import LocalKafka
    from airflow_provider_eos.kafka.broker_protocol import describe_protocol

    with tempfile.TemporaryDirectory(prefix=f"eos-compat-broker-{version}-") as folder:
        kafka = LocalKafka(folder)
        info = kafka.up(kafka_version=version, stop_with_pid=os.getpid())
        try:
            return describe_protocol(info.client_settings())
        finally:
            kafka.down()


def replace_section(page: str, name: str, body: str) -> str:
    """``page`` with its section ``name`` (between ``<!-- compat:name -->`` markers) replaced by ``body``.

    docs/compatibility.md holds one section per matrix (Kafka brokers, Airflow versions); each tool
    rewrites only its own, and a missing one is appended.
    """
    start, end = f"<!-- compat:{name} -->", f"<!-- /compat:{name} -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    if start in page and end in page:
        head, rest = page.split(start, 1)
        return head + block + rest.split(end, 1)[1]
    return (page.rstrip() + "\n\n" if page.strip() else PAGE_HEAD) + block + "\n"


def _cell(outcomes: list[Outcome], nodeids: tuple[str, ...]) -> str:
    mine = [o for o in outcomes if any(o.nodeid == n or o.nodeid.startswith(n + "[") for n in nodeids)]
    if not mine:
        return "not run"
    statuses = {o.status for o in mine}
    status = "fail" if "fail" in statuses else "pass" if "pass" in statuses else "skip"
    return f"{status} ({sum(o.seconds for o in mine):.0f} s)"


def table(results: dict[str, list[Outcome]], protocols: dict[str, str]) -> str:
    """docs/compatibility.md: capability x version."""
    versions = list(results)
    lines = [
        "## Kafka broker versions",
        "",
        f"`make compat` on {dt.date.today().isoformat()}: the tests marked `compat` against brokers of each",
        "version (started by `eos devstack up --kafka-version V`'s code), one row per capability. CI runs the",
        "short ones but the driver writer's crash and the DAG-level abort on the oldest version (`make test-compat`)",
        "and the whole suite on the default. \"not run\":",
        "a long test kept to the newest version (`python -m tools.compat --long-on` names others).",
        "The product's own producers (librdkafka, Spark's kafka-clients 3.9) run transactions v1 on every",
        "broker; the v2 rows drive the broker's own Java client, which negotiates v2 from Kafka 4.0.",
        "",
        "| capability | " + " | ".join(f"Kafka {v}" for v in versions) + " |",
        "|---|" + "---|" * len(versions),
        "| transaction protocol the broker runs | " + " | ".join(protocols[v] for v in versions) + " |",
    ]
    for capability, nodeids in CAPABILITIES.items():
        lines.append(f"| {capability} | " + " | ".join(_cell(results[v], nodeids) for v in versions) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.compat", description=__doc__.splitlines()[0])
    parser.add_argument("--versions", nargs="+", default=list(KAFKA_VERSIONS), metavar="X.Y.Z")
    parser.add_argument("--workers", default="2", help="pytest-xdist workers per version (default 2)")
    parser.add_argument("--long-on", nargs="*", default=[KAFKA_VERSIONS[-1]], metavar="X.Y.Z",
                        help="versions that also run the long compat tests (default the newest: the epoch "
                        "rollover takes ~9 minutes per broker)")
    args = parser.parse_args(argv)
    results, protocols, failed = {}, {}, []
    for version in args.versions:
        protocols[version] = broker_protocol(version)
        results[version], code = run_version(version, args.workers, long=version in args.long_on)
        if code != 0:
            failed.append(f"{version} (pytest exit {code})")
    TABLE.write_text(replace_section(TABLE.read_text() if TABLE.exists() else "", "kafka", table(results, protocols)))
    print(f"wrote {TABLE}")
    if failed:
        print(f"compat: failed on {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
