"""The job of one soak phase as the DAG runs it: start, stop, recover (abort, verify), restart, drain.

The job is the real one (``eos run --spec F --master spark://...``, through
:class:`tests.support.pipeline.PipelineHarness`), in processing-time mode so it keeps working while
input slices arrive and faults land. Whenever it has exited, :meth:`JobControl.ensure_running`
recovers as the DAG's recovery branch does (``eos abort --force``, then ``eos verify``; every
verdict recorded) before starting it again. The at-least-once control has no transactions or
markers to recover: it is only restarted.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from soak.checks import parse_verdict, verdict_ok
from tests.support.pipeline import PipelineHarness, kill_group

EOS = Path(sys.executable).with_name("eos")
EXACTLY_ONCE, AT_LEAST_ONCE = "exactly-once", "at-least-once"
#: How long a SIGTERMed job may take to finish its running batch before it is killed.
STOP_GRACE_S = 120


def log(message: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def eos_command(command: list[str], spec_file: Path, timeout_s: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(EOS), *command, "--spec", str(spec_file)], capture_output=True, text=True,
                          timeout=timeout_s, check=False)


@dataclass
class JobControl:
    """The phase's job process and the record of its runs and recoveries."""

    harness: PipelineHarness
    mode: str
    started_at: float = field(default_factory=time.time)
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    #: The schedule index of the slow_transaction fault the running process is armed for.
    armed_for: int | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)
    recoveries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def exactly_once(self) -> bool:
        return self.mode == EXACTLY_ONCE

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def elapsed(self) -> float:
        return round(time.time() - self.started_at, 2)

    # -- start and stop ------------------------------------------------------------------------

    def ensure_running(self, arm_index: int | None = None) -> bool:
        """Start the job if it is not running (recovering first); True if it was (re)started.

        :param arm_index: a slow_transaction fault's schedule index: a job started now is armed for it.
        """
        if self.alive():
            return False
        self._ended()
        if self.exactly_once and self.runs:
            self.recover()
        self.start(arm_index)
        return True

    def start(self, arm_index: int | None = None, *, trigger_note: str = "") -> None:
        fault = None
        if arm_index is not None and self.exactly_once:
            fault = f"slow_transaction@{self.next_batch()}"
        self.process, self.log_path = self.harness.start(fault=fault, mode=self.mode)
        self.armed_for = arm_index if fault else None
        self.runs.append({"run": self.harness.runs, "started_s": self.elapsed(), "fault": fault,
                          "log": self.log_path.name, "note": trigger_note})
        log(f"  job run {self.harness.runs} started ({self.mode}, {self.harness.spec.writers})"
            + (f" armed with {fault}" if fault else ""))

    def next_batch(self) -> int:
        """The id of the first batch a job started now plans anew (a planned, uncommitted one is replayed first)."""
        checkpoint = self.harness.checkpoint()
        if not checkpoint.exists():
            return 0
        latest = checkpoint.latest_planned_batch()
        return 0 if latest is None else latest + 1

    def stop(self, reason: str) -> None:
        """SIGTERM to ``eos run`` (it forwards it to the driver, which stops after the running batch);
        kill the group if it does not stop in time."""
        if not self.alive():
            self._ended()
            return
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            log(f"  the job did not stop within {STOP_GRACE_S}s of SIGTERM: killing its group")
            kill_group(self.process)
        self._ended(reason)

    def kill(self, reason: str) -> None:
        if self.process is not None:
            kill_group(self.process)
        self._ended(reason)

    def _ended(self, reason: str = "exited") -> None:
        """Record the end of the current run once."""
        if self.process is None or not self.runs or "ended_s" in self.runs[-1]:
            return
        code = self.process.poll()
        if code is None:
            return
        self.runs[-1].update(ended_s=self.elapsed(), returncode=code, end=reason)
        self.armed_for = None

    # -- recovery ------------------------------------------------------------------------------

    def recover(self) -> dict[str, Any]:
        """What the DAG's recovery branch does once the driver is gone: abort what is open, then verify."""
        spec_file = self.harness.spec_file
        started = time.monotonic()
        abort = None
        for attempt in range(1, 4):
            abort = eos_command(["abort", "--execute", "--force"], spec_file)
            if abort.returncode == 0:
                break
            log(f"  eos abort --force exited {abort.returncode} (attempt {attempt}): "
                f"{(abort.stdout + abort.stderr).strip()[-300:]}")
            time.sleep(5)
        assert abort is not None
        verify = eos_command(["verify"], spec_file)
        verdict = parse_verdict(verify.stdout)
        entry = {"at_s": self.elapsed(), "abort_rc": abort.returncode, "verify_rc": verify.returncode,
                 "verdict": verdict, "ok": verify.returncode == 0 and verdict_ok(verdict),
                 "seconds": round(time.monotonic() - started, 1)}
        if not entry["ok"]:
            entry["verify_output"] = (verify.stdout + verify.stderr)[-2000:]
        self.recoveries.append(entry)
        log(f"  recovery: abort rc {abort.returncode}, verify {verdict} (rc {verify.returncode})")
        return entry

    # -- the end of a phase --------------------------------------------------------------------

    def drain(self, timeout_s: float, attempts: int = 3) -> dict[str, Any]:
        """Let the streaming job catch up with its input, then stop it between batches (SIGTERM: it exits
        0). A job that does not catch up in time, or does not exit 0, is stopped and the pipeline run
        available-now until everything produced is through; retried (with recovery) if a run fails."""
        if self.exactly_once and self.alive() and self.caught_up(timeout_s):
            self.stop("caught up: stopped between batches")
            code = self.runs[-1].get("returncode")
            if code == 0:
                self.recover()
                return {"attempts": 0, "returncode": code, "streamed": True}
            log(f"  the caught-up job exited {code} on SIGTERM: draining available-now")
        self.stop("stopped to drain")
        self.harness.with_overrides(trigger="available_now")
        outcome: dict[str, Any] = {"attempts": 0, "returncode": None, "streamed": False}
        for attempt in range(1, attempts + 1):
            if self.exactly_once:
                self.recover()
            self.start(trigger_note="drain (available_now)")
            assert self.process is not None
            try:
                code = self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                code = None
                log(f"  drain run did not finish in {timeout_s:.0f}s")
            self.kill("drain finished" if code == 0 else "drain failed")
            outcome.update(attempts=attempt, returncode=code)
            if code == 0:
                break
        if self.exactly_once:
            self.recover()
        return outcome

    def caught_up(self, timeout_s: float, stall_s: float = 90) -> bool:
        """Wait until the sink group's committed offsets reach the input's last stable offsets (every
        record produced so far is through a committed batch), while the job keeps running; False if
        they do not move for ``stall_s`` (a batch stuck behind a fault: the drain then stops the job,
        as it did before it let a job catch up; one such batch took 590 s in a CI run)."""
        from confluent_kafka.admin import AdminClient

        from airflow_provider_eos.core.topic_partition import TopicPartition
        from airflow_provider_eos.kafka.group_offsets import read_committed_offsets
        from tests.support.kafka import client_settings, end_offsets

        harness = self.harness
        admin = AdminClient(client_settings(harness.bootstrap))
        partitions = [TopicPartition(harness.input_topic, p) for p in range(harness.partitions)]
        deadline = time.monotonic() + timeout_s
        last, moved_at = None, time.monotonic()
        while self.alive() and time.monotonic() < deadline and time.monotonic() - moved_at < stall_s:
            with contextlib.suppress(Exception):  # a broker just restarted by a fault may refuse a moment
                ends = end_offsets(harness.bootstrap, harness.input_topic, harness.partitions, committed=True)
                committed = read_committed_offsets(admin, harness.spec.group_id, partitions,
                                                   transaction_timeout_ms=harness.spec.transaction_timeout_ms)
                if all(committed[tp] is not None and committed[tp].offset == ends[tp.partition] for tp in partitions):
                    return True
                if committed != last:
                    last, moved_at = committed, time.monotonic()
            time.sleep(1)
        log(f"  the job did not catch up (offsets still for {time.monotonic() - moved_at:.0f}s): stopping it")
        return False

    def lingering(self) -> dict[str, Any]:
        """Transactions left open under the prefix: ONGOING ones (DescribeTransactions) and what
        ``eos abort --dry-run`` finds (lingering and hanging ones); none may be left."""
        from airflow_provider_eos.core.transactions import TxnState
        from airflow_provider_eos.kafka.transactions_admin import admin_client, scan_prefix

        with admin_client(self.harness.spec) as admin:
            found = scan_prefix(admin, self.harness.spec.transactional_id_prefix)
        ongoing = [t.transactional_id for t in found if t.state is TxnState.ONGOING]
        dry = eos_command(["abort", "--dry-run"], self.harness.spec_file)
        return {"transactional_ids": len(found), "ongoing": ongoing, "abort_dry_run_rc": dry.returncode,
                "clean": not ongoing and dry.returncode == 0,
                **({} if dry.returncode == 0 else {"abort_dry_run_output": dry.stdout[-2000:]})}

    def logs(self) -> list[Path]:
        return sorted(self.harness.work_dir.glob("run-*.log"), key=lambda p: int(p.stem.split("-")[1]))
