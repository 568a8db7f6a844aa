"""How many requests of each type the bench's broker served during a run, read from its own meters.

Kafka counts every request it serves per type (``kafka.network:type=RequestMetrics,name=RequestsPerSec``).
The bench attaches JMX to its broker once (``jcmd <pid> ManagementAgent.start``, bound to 127.0.0.1 on a free
port), then reads the counts before and after each job (``bench/java/BrokerRequestCounts.java``, compiled once
with ``javac``). The difference is that job's requests: on a machine whose two cores Spark shares with the
broker, each request the exactly-once protocol adds (the offsets, the commit, the markers, a producer per
input partition instead of one) is broker CPU taken from Spark.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from airflow_provider_eos.devstack.broker_config import free_port
from bench.measure import log

#: A per-type figure of the broker's: a count of requests, or milliseconds.
Figure = TypeVar("Figure", int, float)

_SOURCE = Path(__file__).parent / "java" / "BrokerRequestCounts.java"
_CLASS = "BrokerRequestCounts"

#: The request types the report shows on their own, in this order; the rest are summed as "other".
SHOWN = ("Produce", "Fetch", "ListOffsets", "Metadata", "FindCoordinator", "OffsetFetch", "InitProducerId",
         "AddPartitionsToTxn", "AddPartitionsToTxnVerification", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn",
         "WriteTxnMarkers")
#: What reading the counters can fail with (a JDK tool missing or failing, no agent on the port): logged, the
#: runs go on without the counts.
_READ_FAILURES = (RuntimeError, OSError, subprocess.SubprocessError)
#: Kafka's meters that count a subset of another type's requests again (fetches from consumers, from followers).
SUBSETS = ("FetchConsumer", "FetchFollower")
#: Of :data:`SHOWN`, what the transactions add (the client's and the broker's own requests).
TRANSACTIONAL = ("FindCoordinator", "OffsetFetch", "InitProducerId", "AddPartitionsToTxn",
                 "AddPartitionsToTxnVerification", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "WriteTxnMarkers")


class BrokerRequests:
    """The broker's request counters over JMX (see the module's docstring)."""

    def __init__(self, port: int, classes: Path) -> None:
        self.port, self.classes = port, classes

    @classmethod
    def attach(cls, broker_pid: int, work_dir: Path) -> BrokerRequests:
        """Start the broker JVM's JMX agent on 127.0.0.1 and compile the reader.

        :raises RuntimeError: naming the JDK tool that is missing or failed.
        """
        for tool in ("jcmd", "javac", "java"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"{tool} not found: the broker's request counts need a JDK's {tool} on PATH")
        classes = work_dir / "broker-requests"
        classes.mkdir(parents=True, exist_ok=True)
        _run(["javac", "-d", str(classes), str(_SOURCE)])
        # A JVM runs one agent: a broker attached before (an earlier bench in the same session) keeps its port.
        port = _agent_port(_run(["jcmd", str(broker_pid), "ManagementAgent.status"]))
        if port is None:
            port = free_port()
            _run(["jcmd", str(broker_pid), "ManagementAgent.start", f"jmxremote.port={port}",
                  f"jmxremote.rmi.port={port}", "jmxremote.host=127.0.0.1", "jmxremote.authenticate=false",
                  "jmxremote.ssl=false"])
        return cls(port, classes)

    @classmethod
    def attach_or_none(cls, broker_pid: int | None, work_dir: Path) -> BrokerRequests | None:
        """:meth:`attach`, or ``None`` (logged) where it cannot: the bench's runs go on without the counts."""
        if broker_pid is None:
            log("broker requests: no process listens on the bootstrap port; runs are recorded without them")
            return None
        try:
            return cls.attach(broker_pid, work_dir)
        except _READ_FAILURES as exc:
            log(f"broker requests: {exc}; runs are recorded without them")
            return None

    def counts(self) -> dict[str, int]:
        """Requests served since the broker started, per type."""
        return {kind: int(count) for kind, count in self._read().items()}

    def held_ms(self) -> dict[str, float]:
        """Milliseconds the broker held requests waiting since it started, per type (Kafka's ``RemoteTimeMs``).

        A fetch is held until records arrive or the consumer's ``fetch.max.wait.ms`` runs out; a produce
        with ``acks=all`` until its replicas have it.
        """
        return {kind: float(total) for kind, total in self._read("RemoteTimeMs").items()}

    def compilation_ms(self) -> int:
        """Milliseconds the broker's JVM has spent in its JIT compilers since it started.

        A fresh broker compiles the code each kind of work reaches first (the transaction coordinator's only
        once transactions come): CPU taken from Spark on a shared machine, which a warm broker does not spend.
        """
        return int(self._read("CompilationMs")["compilation"])

    def compilation_ms_or_none(self) -> int | None:
        """:meth:`compilation_ms`, or ``None`` (logged) when reading it failed."""
        try:
            return self.compilation_ms()
        except (*_READ_FAILURES, KeyError, ValueError) as exc:
            log(f"broker compilation time: {exc}")
            return None

    def _read(self, *metric: str) -> dict[str, str]:
        text = _run(["java", "-cp", str(self.classes), _CLASS, str(self.port), *metric])
        return dict(line.split("\t") for line in text.splitlines() if line)

    def counts_or_none(self) -> dict[str, int] | None:
        """:meth:`counts`, or ``None`` (logged) when reading them failed: the run is recorded without them."""
        try:
            return self.counts()
        except _READ_FAILURES as exc:
            log(f"broker requests: {exc}")
            return None


def served(before: Mapping[str, Figure], after: Mapping[str, Figure]) -> dict[str, Figure]:
    """What was served between two :meth:`BrokerRequests.counts` (or :meth:`~BrokerRequests.held_ms`), per type.

    Types with nothing between them are left out.
    """
    return {kind: after[kind] - before.get(kind, 0) for kind in sorted(after) if after[kind] > before.get(kind, 0)}


def per_batch(requests: Mapping[str, int], batches: int) -> dict[str, float]:
    """:data:`SHOWN` per batch, the rest as ``other``, and the transactions' share (``transactional``) and ``total``."""
    batches = max(1, batches)
    requests = {kind: count for kind, count in requests.items() if kind not in SUBSETS}
    shown = {kind: round(requests.get(kind, 0) / batches, 1) for kind in SHOWN}
    other = sum(count for kind, count in requests.items() if kind not in SHOWN)
    return {**shown, "other": round(other / batches, 1),
            "transactional": round(sum(requests.get(kind, 0) for kind in TRANSACTIONAL) / batches, 1),
            "total": round(sum(requests.values()) / batches, 1)}


def median_per_batch(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Per type, the median over ``runs`` of their ``broker_requests_per_batch``; empty when none has them."""
    found = [r["broker_requests_per_batch"] for r in runs if r.get("broker_requests_per_batch")]
    kinds = sorted({kind for figures in found for kind in figures})
    return {kind: round(statistics.median(f.get(kind, 0) for f in found), 1) for kind in kinds} if found else {}


def _agent_port(status: str) -> int | None:
    """The remote agent's port in ``jcmd ManagementAgent.status`` output; ``None`` when none runs."""
    found = re.search(r"com\.sun\.management\.jmxremote\.port = (\d+)", status)
    return int(found.group(1)) if found else None


def _run(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:2])} failed ({done.returncode}): {(done.stderr or done.stdout)[-400:]}")
    return done.stdout
