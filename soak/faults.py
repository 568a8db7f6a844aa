"""The nine fault kinds and how each is applied to the running pipeline.

Every fault first waits for its window: an ONGOING transaction of the pipeline (DescribeTransactions
under the prefix) for the exactly-once phases, fresh output for the at-least-once control (it has no
transactions). The fault record says whether that window was found, i.e. whether the fault hit an
open transaction, with the evidence (which transactional ids were ONGOING, on which coordinator, how
long before the fault they were seen; for slow_transaction the job's own ``EOS-FAULT fired`` line).
Only processes of the soak's own devstack and job are ever signalled.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Callable
from typing import Any

from soak.job import JobControl, log
from soak.schedule import FaultEvent, choose
from soak.targets import (
    FaultContext,
    Window,
    executors,
    group_coordinator,
    ongoing,
    output_leader,
    prefix_transactions,
    python_workers,
    wait_window,
)

#: SIGSTOP a broker longer than the producers' request timeout (30 s).
PAUSE_S = 35
#: Between the SIGKILL of a broker and its restart: long enough for clients to notice it is gone.
DOWN_S = 3
_FIRED = re.compile(r"EOS-FAULT fired: slow_transaction[^\n]*")


# -- applying ------------------------------------------------------------------------------------


def _kill_restart(ctx: FaultContext, node: int) -> None:
    ctx.kafka.fault("kill", node)
    time.sleep(DOWN_S)
    _restart(ctx, node)


def _restart(ctx: FaultContext, node: int) -> None:
    for attempt in (1, 2):
        try:
            ctx.kafka.fault("restart", node)
            return
        except Exception as exc:  # one more try, then the error surfaces
            log(f"  restart of broker {node} failed (attempt {attempt}): {exc}")
            if attempt == 2:
                raise


def _pause(ctx: FaultContext, node: int) -> None:
    ctx.kafka.fault("pause", node)
    try:
        time.sleep(PAUSE_S)
    finally:
        ctx.kafka.fault("resume", node)


def _kill_pid(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def apply(event: FaultEvent, ctx: FaultContext) -> dict[str, Any]:
    """Apply ``event`` to the running phase; returns its fault-log entry."""
    record: dict[str, Any] = {"index": event.index, "phase": event.phase, "mode": ctx.job.mode, "kind": event.kind,
                              "applied": True, "target": None, "note": ""}
    started = time.monotonic()
    if event.kind == "slow_transaction":
        record.update(_slow_transaction(event, ctx))
    else:
        ctx.job.ensure_running()
        window = wait_window(ctx)
        record.update(_HANDLERS[event.kind](event, ctx, window))
        record.update(window.evidence(record.get("fault_at", time.time())))
        if event.kind in _PROCESS_KILLS and window.ongoing and record["applied"]:
            record["still_ongoing_after_fault"] = _still_open(ctx, window)
    if event.replaces:  # the fault log says what was drawn and why this runs instead
        record["replaces"] = event.replaces
        record["note"] = f"drawn as {event.replaces} (the JVM executor writer has no Python worker)" + (
            f"; {record['note']}" if record["note"] else "")
    # When it struck, in seconds since the phase started (the chart's marks).
    record["fault_s"] = round(record.pop("fault_at", time.time()) - ctx.job.started_at, 2)
    record.update(at_s=ctx.job.elapsed(), seconds=round(time.monotonic() - started, 1), job_alive=ctx.job.alive())
    hit = "OPEN TXN" if record.get("open_transaction") else ("output growing" if record.get("output_growing")
                                                           else "no open txn")
    note = f" {record['note']}" if record["note"] else ""
    log(f"  fault {event.index} {event.kind} -> {record['target']} ({hit}){note}")
    return record


_PROCESS_KILLS = ("kill_driver", "kill_python_worker", "kill_executor")


def _still_open(ctx: FaultContext, window: Window) -> list[str]:
    """The transactions seen open before a process kill that are still open, the same ones (same start
    time), right after it: the kill left them open, the strongest evidence that it hit one."""
    before = {(t.transactional_id, t.start_time_ms) for t in window.ongoing}
    return [t.transactional_id for t in _safe(ongoing, ctx) or [] if (t.transactional_id, t.start_time_ms) in before]


def _kill_driver(event: FaultEvent, ctx: FaultContext, window: Window) -> dict[str, Any]:
    at = time.time()
    pid = ctx.job.process.pid if ctx.job.process else None
    ctx.job.kill("kill_driver fault")
    return {"target": f"job group {pid}", "fault_at": at}


def _kill_one(found: list[int], event: FaultEvent, what: str, none_note: str) -> dict[str, Any]:
    """SIGKILL the process ``event.pick`` chooses among ``found`` (a Python worker, an executor JVM)."""
    if not found:
        return {"applied": False, "note": none_note}
    victim = choose(found, event.pick)
    at = time.time()
    _kill_pid(victim)
    return {"target": f"{what} {victim}", "fault_at": at, "candidates": len(found)}


def _kill_python_worker(event: FaultEvent, ctx: FaultContext, window: Window) -> dict[str, Any]:
    return _kill_one([p.pid for p in python_workers(ctx)], event, "python worker",
                     "no PySpark Python worker running (none needed by this writer)")


def _kill_executor(event: FaultEvent, ctx: FaultContext, window: Window) -> dict[str, Any]:
    return _kill_one([p.pid for p in executors(ctx)], event, "executor JVM", "no executor JVM running")


Handler = Callable[[FaultEvent, FaultContext, Window], dict[str, Any]]


def _broker(kind: str) -> Handler:
    def handler(event: FaultEvent, ctx: FaultContext, window: Window) -> dict[str, Any]:
        note = ""
        if kind == "kill_transaction_coordinator":
            # The coordinators of the transactions seen open a moment ago (DescribeTransactions).
            coordinators = sorted({t.coordinator_id for t in window.ongoing if t.coordinator_id is not None})
            note = ""
            if not coordinators:  # none seen open: the coordinator of the pipeline's ids all the same
                coordinators = sorted({t.coordinator_id for t in _safe(prefix_transactions, ctx) or []
                                       if t.coordinator_id is not None})
                note = "no open transaction seen: the coordinator of the prefix's ids"
            node = choose(coordinators or ctx.nodes, event.pick)
            note = note if coordinators else "no transactional id of the pipeline yet: a random broker"
        elif kind == "kill_group_coordinator":
            node = _safe(group_coordinator, ctx) or choose(ctx.nodes, event.pick)
        elif kind == "kill_output_leader":
            leader = _safe(lambda c: output_leader(c, event.pick), ctx)
            node = leader[1] if leader else choose(ctx.nodes, event.pick)
            note = f"output partition {leader[0]}" if leader else "leader unknown: a random broker"
        else:
            node = choose(ctx.nodes, event.pick)
        at = time.time()
        if kind == "pause_broker":
            _pause(ctx, node)
        elif kind == "restart_broker":
            _restart(ctx, node)
        else:
            _kill_restart(ctx, node)
        return {"target": f"broker {node}", "fault_at": at, "note": note}

    return handler


def _safe(call: Callable[[FaultContext], Any], ctx: FaultContext) -> Any:
    try:
        return call(ctx)
    except Exception as exc:
        log(f"  (target lookup failed: {type(exc).__name__}: {str(exc)[:120]})")
        return None


def _slow_transaction(event: FaultEvent, ctx: FaultContext) -> dict[str, Any]:
    """The job's own test-only fault: a batch stalls past ``transaction.timeout.ms`` before its commit and
    the broker aborts it. Needs a job armed at start: one started for this fault, else one restarted now
    (twice at most: an armed job that dies of something else before its slow batch is armed again)."""
    job = ctx.job
    if not job.exactly_once:
        return {"applied": False, "note": "no transaction in the at-least-once writer: nothing to slow down"}
    fired, note = None, ""
    for _ in range(2):
        if job.alive() and job.armed_for != event.index:
            job.stop("restarted to arm slow_transaction")
        job.ensure_running(arm_index=event.index)
        fired, note = _await_fired(job)
        if fired or note != "exited":
            break
    if fired is None:
        return {"applied": False, "note": "the armed job exited before its slow batch" if note == "exited" else note}
    at = time.time()
    time.sleep(1)  # the stalled batch has produced and holds its transaction open
    window = Window()
    window.ongoing = _safe(ongoing, ctx) or []
    seen_after_ms = round((time.time() - at) * 1000)
    stall_s = job.harness.spec.transaction_timeout_ms / 1000 + 8
    # Until the stall is over and the broker has aborted: the job then fails or retries the batch.
    end = time.monotonic() + stall_s + 10
    while time.monotonic() < end and job.alive():
        time.sleep(0.5)
    evidence = window.evidence(at)
    evidence.update(seen_ms_before_fault=None, seen_ms_after_stall_began=seen_after_ms)
    return {"target": f"job run {job.harness.runs}", "fired": fired, "fault_at": at, **evidence,
            "evidence_source": "the job's EOS-FAULT fired line, then DescribeTransactions during the stall"}


def _await_fired(job: JobControl, timeout_s: float = 240) -> tuple[str | None, str]:
    """The armed run's ``EOS-FAULT fired`` line, or None with why not (``exited``, or a timeout)."""
    faults_file = job.log_path.with_suffix(".faults") if job.log_path else None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if faults_file and faults_file.exists() and (found := _FIRED.search(faults_file.read_text())):
            return found.group(0), ""
        if not job.alive():
            return None, "exited"
        time.sleep(0.2)
    return None, f"the armed batch did not start within {timeout_s:.0f}s"


_HANDLERS: dict[str, Handler] = {
    "kill_driver": _kill_driver,
    "kill_python_worker": _kill_python_worker,
    "kill_executor": _kill_executor,
    **{kind: _broker(kind) for kind in ("kill_transaction_coordinator", "kill_group_coordinator",
                                        "kill_output_leader", "restart_broker", "pause_broker")},
}
