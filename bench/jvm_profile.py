"""Where the Spark JVM spends its time: Java Flight Recorder execution samples, grouped.

The job's JVM (spark-submit's driver JVM, which in ``local[2]`` also runs the executor tasks)
is started with ``-XX:StartFlightRecording=settings=profile`` (a sample of every running Java
thread every 10-20 ms). ``jfr print`` (JDK tool) turns the recording into text; each sample is
attributed to its thread group and, for the executor task threads, to the first frame from the
top of the stack that matches a category below. Samples cover Java code only (time in native
code such as socket reads is in ``jdk.NativeMethodSample`` and not counted).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

JFR_OPTION = "-XX:StartFlightRecording=settings=profile,dumponexit=true,filename={path}"

# First match from the top of the stack wins, so specific libraries come before generic ones.
CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("compression", ("net.jpountz.", "com.github.luben.", "org.xerial.snappy.", "java.util.zip.",
                     "org.apache.kafka.common.compress.")),
    ("Arrow conversion", ("org.apache.spark.sql.execution.arrow.", "org.apache.arrow.",
                          "org.apache.spark.sql.util.ArrowUtils")),
    ("Kafka producer", ("org.apache.kafka.clients.producer.",)),
    ("Kafka consumer and record decoding", ("org.apache.kafka.clients.consumer.", "org.apache.kafka.common.record.",
                                            "org.apache.spark.sql.kafka010.consumer.")),
    ("Spark Kafka source/writer", ("org.apache.spark.sql.kafka010.",)),
    ("Spark SQL rows and codegen", ("org.apache.spark.sql.catalyst.", "GeneratedClass", "org.apache.spark.unsafe.",
                                    "org.apache.spark.sql.execution.")),
    ("serialization (results to driver)", ("org.apache.spark.serializer.", "java.io.ObjectOutputStream",
                                           "org.apache.spark.util.io.")),
    ("JSON (Jackson)", ("com.fasterxml.jackson.",)),
    ("code generation (Janino)", ("org.codehaus.janino.", "org.codehaus.commons.")),
    ("task (de)serialization", ("java.io.ObjectInputStream", "java.io.ObjectOutputStream")),
    ("network I/O", ("sun.nio.", "java.nio.", "java.net.", "org.apache.kafka.common.network.")),
    ("other Spark", ("org.apache.spark.", "scala.")),
]

_THREAD_RE = re.compile(r'sampledThread = "(.*)" \(javaThreadId')


def _thread_group(name: str) -> str:
    if name.startswith("Executor task launch worker"):
        return "executor tasks"
    if name.startswith("stream execution thread"):
        return "stream execution (driver)"
    if name.startswith("kafka-producer-network-thread"):
        return "Kafka producer I/O thread"
    if name.startswith("kafka-"):
        return "other Kafka client threads"
    return "other (startup, RPC, listeners, Py4J)"


def _category(frames: list[str]) -> str:
    for frame in frames:
        for name, prefixes in CATEGORIES:
            if any(frame.startswith(p) or p in frame.split("(", 1)[0] for p in prefixes):
                return name
    return "JDK / other"


def wait_for_recording(recording: Path, timeout_s: float = 60) -> None:
    """The JVM writes the recording in a shutdown hook; wait until the file exists and stops growing."""
    deadline = time.monotonic() + timeout_s
    last = -1
    while time.monotonic() < deadline:
        size = recording.stat().st_size if recording.exists() else -1
        if size > 0 and size == last:
            return
        last = size
        time.sleep(2)
    raise RuntimeError(f"no complete flight recording at {recording}")


def _blocks(recording: Path, events: str) -> list[tuple[str, str, list[str], dict[str, str]]]:
    """``(event type, thread, frames, fields)`` of every event of ``events`` in the recording."""
    jfr = shutil.which("jfr") or str(Path(shutil.which("java") or "java").resolve().with_name("jfr"))
    text = subprocess.run([jfr, "print", "--stack-depth", "40", "--events", events, str(recording)],
                          capture_output=True, text=True, check=True).stdout
    blocks: list[tuple[str, str, list[str], dict[str, str]]] = []
    kind, thread, frames, fields, in_stack = "", "", [], {}, False
    for line in text.splitlines():
        stripped = line.strip()
        if line.startswith("jdk.") and stripped.endswith("{"):
            kind, thread, frames, fields, in_stack = stripped[:-1].strip(), "", [], {}, False
        elif line == "}":
            blocks.append((kind, thread, frames, fields))
        elif match := _THREAD_RE.search(line):
            thread = match.group(1)
        elif stripped == "stackTrace = [":
            in_stack = True
        elif in_stack and stripped == "]":
            in_stack = False
        elif in_stack:
            if stripped != "...":
                frames.append(stripped)
        elif " = " in stripped:
            key, _, value = stripped.partition(" = ")
            fields[key] = value
    return blocks


def _native_category(frames: list[str]) -> str:
    top = frames[0] if frames else ""
    if "EPoll.wait" in top or "poll0" in top:
        return "waiting on network (epoll)"
    if "sun.nio.ch" in top or "java.net" in top:
        return "socket read/write"
    return "other native"


def _percent(value: str) -> float:
    return float(value.rstrip("%"))


def analyze(recording: Path) -> dict[str, Any]:
    """Java samples per thread group and, for executor task threads, per category; native samples of
    the task threads; and the JVM's and the machine's CPU use (``jdk.CPULoad``, once a second)."""
    groups: Counter = Counter()
    task_categories: Counter = Counter()
    for _, thread, frames, _ in _blocks(recording, "jdk.ExecutionSample"):
        group = _thread_group(thread)
        groups[group] += 1
        if group == "executor tasks":
            task_categories[_category(frames)] += 1
    native: Counter = Counter()
    loads: list[tuple[float, float]] = []
    for kind, thread, frames, fields in _blocks(recording, "jdk.NativeMethodSample,jdk.CPULoad"):
        if kind == "jdk.CPULoad" and "machineTotal" in fields:
            machine = _percent(fields["machineTotal"])
            if machine > 0:
                loads.append((_percent(fields["jvmUser"]) + _percent(fields["jvmSystem"]), machine))
        elif kind == "jdk.NativeMethodSample" and _thread_group(thread) == "executor tasks":
            native[_native_category(frames)] += 1
    total, tasks = sum(groups.values()), sum(task_categories.values())
    return {
        "java_samples": total,
        "thread_groups": {k: round(v / total, 3) for k, v in groups.most_common()} if total else {},
        "executor_task_samples": tasks,
        "executor_task_categories": {k: round(v / tasks, 3) for k, v in task_categories.most_common()}
        if tasks else {},
        "executor_task_native_samples": dict(native.most_common()),
        "cpu": {"jvm_percent_of_machine": round(sum(j for j, _ in loads) / len(loads), 1),
                "machine_busy_percent": round(sum(m for _, m in loads) / len(loads), 1),
                "seconds": len(loads)} if loads else None,
    }
