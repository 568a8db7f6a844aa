"""EOS3xx: Spark and the checkpoint.

The source reads ``read_committed`` with ``failOnDataLoss``, no async progress tracking, a cap
per trigger, durable checkpoint storage that belongs to this pipeline, the exactly-once mode,
and a checkpoint that keeps the batches verification and rewind read.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from airflow_provider_eos.core.errors import MarkerError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffsets
from airflow_provider_eos.core.preflight.facts import PreflightFacts
from airflow_provider_eos.core.preflight.locations import (
    TEMP_DIRS,
    VOLATILE_SCHEMES,
    canonical_location,
    is_host_local,
    is_local_master,
    scheme,
)
from airflow_provider_eos.core.preflight.readings import format_ms
from airflow_provider_eos.core.preflight.rule import Outcome, Severity, failed, not_checked, passed, rule, unknown
from airflow_provider_eos.core.spec import Mode, PipelineSpec
from airflow_provider_eos.core.transactions import format_age

_READ_COMMITTED = "read_committed"


def _settings(spec: PipelineSpec) -> list[tuple[str, str, str]]:
    """Every ``(place, key, value)`` of the spec's ``kafka`` dict and ``spark_conf``."""
    entries = [("kafka", k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in spec.kafka.items()]
    entries += [("spark_conf", k, v) for k, v in spec.spark_conf.items()]
    return entries


def _named(spec: PipelineSpec, suffix: str) -> list[tuple[str, str, str]]:
    """Settings named ``suffix`` or ending in ``.<suffix>`` (case-insensitive).

    Matching the end of the name catches every spelling that could reach the Kafka source:
    ``isolation.level``, ``kafka.isolation.level``, ``spark.some.prefix.failOnDataLoss``.
    """
    wanted = suffix.lower()
    return [(p, k, v) for p, k, v in _settings(spec) if k.lower() == wanted or k.lower().endswith("." + wanted)]


def _marker_query_ids(offsets: CommittedOffsets) -> dict[str, int]:
    """Query id -> highest batch among the group's markers; unreadable metadata is skipped."""
    found: dict[str, int] = {}
    for committed in offsets.values():
        if committed is None or not committed.metadata:
            continue
        try:
            marker = BatchMarker.decode(committed.metadata)
        except MarkerError:
            continue
        found[marker.query_id] = max(found.get(marker.query_id, -1), marker.batch_id)
    return found


def _contradicting(spec: PipelineSpec, key: str, good: Callable[[str], bool]) -> list[str]:
    return [f"{place}[{name!r}]={value!r}" for place, name, value in _named(spec, key) if not good(value)]


@rule(
    "EOS301",
    Severity.ERROR,
    "read_committed source",
    "remove isolation.level from the spec (the job reads read_committed), or set it to read_committed",
)
def _read_committed(facts: PreflightFacts) -> Outcome:
    # Reading uncommitted input would take records of transactions upstream later aborts.
    found = _contradicting(facts.spec, "isolation.level", lambda v: v.strip().lower() == _READ_COMMITTED)
    if found:
        return failed(f"{', '.join(found)} contradicts the read_committed source of an exactly-once pipeline")
    return passed("the source reads read_committed; nothing in the spec overrides it")


@rule(
    "EOS302",
    Severity.ERROR,
    "failOnDataLoss on",
    "remove failOnDataLoss=false from the spec: lost input must stop the query, not be skipped",
)
def _fail_on_data_loss(facts: PreflightFacts) -> Outcome:
    found = _contradicting(facts.spec, "failOnDataLoss", lambda v: v.strip().lower() != "false")
    if found:
        return failed(f"{', '.join(found)}: Spark would skip deleted or truncated input silently")
    return passed("the source runs with failOnDataLoss=true; nothing in the spec turns it off")


@rule(
    "EOS303",
    Severity.ERROR,
    "no async progress tracking",
    "remove asyncProgressTrackingEnabled from the spec's spark_conf",
)
def _async_progress(facts: PreflightFacts) -> Outcome:
    # Async progress tracking commits offsets to the checkpoint before the batch's output is
    # committed, so a crash between the two loses the batch.
    found = [
        f"{place}[{name!r}]={value!r}"
        for place, name, value in _settings(facts.spec)
        if "asyncprogresstracking" in name.lower() and name.lower().endswith("enabled") and value.strip() == "true"
    ]
    if found:
        return failed(f"{', '.join(found)}: the checkpoint would run ahead of the committed output")
    return passed("async progress tracking is not enabled")


@rule(
    "EOS304",
    Severity.WARNING,
    "maxOffsetsPerTrigger set",
    "set max_offsets_per_trigger so the first batch after a pause stays within the transaction timeout",
)
def _max_offsets(facts: PreflightFacts) -> Outcome:
    value = facts.spec.max_offsets_per_trigger
    if value is None:
        return failed(
            "max_offsets_per_trigger is null: after a pause the first batch takes the whole backlog, which may "
            f"outlast transaction_timeout_ms {format_ms(facts.spec.transaction_timeout_ms)}"
        )
    return passed(f"max_offsets_per_trigger {value}")


@rule(
    "EOS305",
    Severity.ERROR,
    "durable checkpoint storage for a cluster master",
    "put checkpoint_location on storage every cluster node reaches (hdfs://, s3a://, gs://, abfss://), or "
    "run with a local[...] master",
)
def _durable_checkpoint(facts: PreflightFacts) -> Outcome:
    location = facts.spec.checkpoint_location
    master = facts.master
    if master is None:
        return not_checked(
            "not checked: no Spark master given (pass master / --master, or set spark.master in spark_conf)"
        )
    if is_local_master(master):
        return passed(f"master {master!r} keeps driver and checkpoint on this host; {location!r} is fine")
    if is_host_local(location):
        return failed(
            f"checkpoint_location {location!r} is a path on one host but master {master!r} runs the driver on a "
            "cluster node: the checkpoint is lost or split when the driver moves"
        )
    return passed(f"checkpoint_location {location!r} is shared storage for master {master!r}")


@rule(
    "EOS306",
    Severity.ERROR,
    "checkpoint not in memory",
    "put checkpoint_location on a disk or object store",
)
def _not_in_memory(facts: PreflightFacts) -> Outcome:
    location = facts.spec.checkpoint_location
    if scheme(location) in VOLATILE_SCHEMES:
        return failed(f"checkpoint_location {location!r} is in memory: it is gone when the process ends")
    return passed(f"checkpoint_location {location!r} is not in memory")


@rule(
    "EOS307",
    Severity.WARNING,
    "checkpoint not under a temporary directory",
    "move checkpoint_location out of /tmp, /var/tmp and /dev/shm (e.g. under $EOS_HOME or shared storage)",
)
def _not_in_temp(facts: PreflightFacts) -> Outcome:
    location = facts.spec.checkpoint_location
    if not is_host_local(location):
        return passed(f"checkpoint_location {location!r} is not a local path")
    path = canonical_location(location) + "/"
    if path.startswith(TEMP_DIRS):
        return failed(f"checkpoint_location {location!r} is under a temporary directory cleaned on reboot or by age")
    return passed(f"checkpoint_location {location!r} is not under a temporary directory")


@rule(
    "EOS308",
    Severity.ERROR,
    "the checkpoint belongs to this pipeline",
    "point checkpoint_location at this pipeline's checkpoint (or restore it); to start over on purpose, use a "
    "new group_id and transactional_id_prefix",
)
def _checkpoint_ownership(facts: PreflightFacts) -> Outcome:
    # The sink's markers name the query that committed them; a checkpoint with another query id
    # (or none at all while markers exist) would replay or skip batches against the wrong history,
    # and a checkpoint with committed batches beside a group without markers stops the sink.
    if facts.checkpoint is None:
        return unknown(facts, "checkpoint", "the checkpoint was")
    if facts.group_offsets is None:
        return unknown(facts, "group_offsets", "the sink group's committed offsets were")
    markers = _marker_query_ids(facts.group_offsets)
    checkpoint = facts.checkpoint
    found = ", ".join(f"{q} (up to batch {b})" for q, b in sorted(markers.items()))
    if not checkpoint.exists:
        if markers:
            return failed(
                f"no checkpoint at {checkpoint.location!r}, but group {facts.spec.group_id!r} holds batch markers of "
                f"query {found}: the checkpoint was lost or checkpoint_location changed, and a new query would "
                "re-read input the group says is done"
            )
        return passed(f"no checkpoint and no batch markers in group {facts.spec.group_id!r}: a first run")
    if not markers:
        group = facts.spec.group_id
        if checkpoint.last_committed is None:
            return passed(
                f"checkpoint query {checkpoint.query_id} has no batch committed yet; group {group!r} holds no batch "
                "markers yet"
            )
        if facts.spec.mode != Mode.EXACTLY_ONCE:
            return passed(
                f"checkpoint query {checkpoint.query_id}; group {group!r} holds no batch markers: mode "
                f"{facts.spec.mode.value!r} writes none"
            )
        committed = checkpoint.last_committed
        return failed(
            f"checkpoint {checkpoint.location!r} (query {checkpoint.query_id}) committed batch {committed}, but group "
            f"{group!r} holds no batch markers: the group lost them (offsets.retention.minutes, a deleted group) "
            f"or never had them, and the sink stops the job on its next batch (InconsistentOffsetsError: batch "
            f"{committed + 1} expects the group at the marker of batch {committed})",
            fix="run `eos verify --spec FILE` to see what the group lacks, then `eos repair align --spec FILE` (a dry "
            f"run; then --execute) to commit batch {committed}'s offsets with its markers; or, to start the pipeline "
            "over on purpose (it reads again from startingOffsets), delete the checkpoint",
        )
    foreign = {q: b for q, b in markers.items() if q != checkpoint.query_id}
    if foreign:
        listed = ", ".join(f"{q} (up to batch {b})" for q, b in sorted(foreign.items()))
        return failed(
            f"checkpoint {checkpoint.location!r} has query id {checkpoint.query_id}, but group "
            f"{facts.spec.group_id!r} holds batch markers of query {listed}: the checkpoint or the group belongs "
            "to another pipeline or run"
        )
    return passed(
        f"checkpoint query {checkpoint.query_id} matches the group's markers (up to batch "
        f"{markers[checkpoint.query_id]})"
    )


@rule(
    "EOS309",
    Severity.WARNING,
    "exactly-once sink mode",
    "set mode: exactly-once (at-least-once is Spark's built-in writer, for baselines only)",
)
def _mode(facts: PreflightFacts) -> Outcome:
    if facts.spec.mode != Mode.EXACTLY_ONCE:
        return failed(f"mode is {facts.spec.mode.value!r}: replays after a failure duplicate output")
    return passed(f"mode is {Mode.EXACTLY_ONCE.value!r}")


@rule(
    "EOS310",
    Severity.INFO,
    "checkpoint state",
    "none: a note on where the query resumes",
)
def _checkpoint_state(facts: PreflightFacts) -> Outcome:
    checkpoint = facts.checkpoint
    if checkpoint is None:
        return unknown(facts, "checkpoint", "the checkpoint was")
    if not checkpoint.exists:
        return failed(
            f"no checkpoint at {checkpoint.location!r}: the query starts from startingOffsets "
            f"{facts.spec.starting_offsets!r}"
        )
    planned, committed = checkpoint.last_planned, checkpoint.last_committed
    if planned is not None and (committed is None or planned > committed):
        return failed(
            f"batch {planned} was planned but not committed (last committed: {committed}); the restart replays it "
            "and the sink skips it if its marker is already in the group"
        )
    return passed(f"last committed batch {committed}; the query resumes after it")


# -- batch retention: what Spark keeps of offsets/ and commits/ -------------------------------
#
# After planning batch P Spark deletes every offsets/ and commits/ file below P - N, where N is
# spark.sql.streaming.minBatchesToRetain: offsets/P-N..P remain. After a crash mid-batch the last
# planned batch is P = C + 1 (C: last committed). Verification reads offsets/C, offsets/C+1 and
# offsets/M for a group marker M < C; a rewind to batch K needs offsets/K-1, offsets/K and
# commits/K. So a group one batch behind (M = C - 1) is verifiable only with N >= 2, and a
# rewind goes back at most N - 2 batches after such a crash (N - 1 after a clean stop).

#: The Spark SQL setting, spelled exactly (Spark ignores any other spelling).
MIN_BATCHES_TO_RETAIN = "spark.sql.streaming.minBatchesToRetain"
#: Spark's default for :data:`MIN_BATCHES_TO_RETAIN`.
SPARK_DEFAULT_MIN_BATCHES_TO_RETAIN = 100
#: Below this verification cannot read offsets/C-1 after a crash mid-batch (EOS311).
MIN_BATCHES_TO_VERIFY = 2
#: Below this a rewind cannot reach back the 8 batches an operator may need (EOS312).
MIN_BATCHES_TO_REWIND = 10

_JAVA_INT = re.compile(r"[+-]?[0-9]+")

_RETAIN_FIX = (
    f"set {MIN_BATCHES_TO_RETAIN} in the spec's spark_conf to {MIN_BATCHES_TO_REWIND} or more, or remove it "
    f"(Spark's default {SPARK_DEFAULT_MIN_BATCHES_TO_RETAIN}); more batches cost only small files in offsets/ and "
    "commits/ (and state versions of a stateful query)"
)


def _batches_to_retain(spec: PipelineSpec) -> tuple[int | None, str]:
    """The value the job runs with (``None``: not an integer) and where it comes from, for messages."""
    raw = spec.spark_conf.get(MIN_BATCHES_TO_RETAIN)
    if raw is None:
        # A cluster's spark-defaults.conf could still set it; pre-flight cannot see that file.
        return SPARK_DEFAULT_MIN_BATCHES_TO_RETAIN, (
            f"Spark's default {MIN_BATCHES_TO_RETAIN}={SPARK_DEFAULT_MIN_BATCHES_TO_RETAIN} (not set in spark_conf)"
        )
    where = f"spark_conf[{MIN_BATCHES_TO_RETAIN!r}]={raw!r}"
    # Spark parses it as a Java int: ASCII digits with an optional sign, within 32 bits.
    if not _JAVA_INT.fullmatch(raw.strip()) or not -(2**31) <= int(raw) < 2**31:
        return None, where
    return int(raw), where


def _rewind_reach(retained: int) -> int:
    """How many batches a rewind can go back after a crash mid-batch (the worst case)."""
    return max(retained - 2, 0)


@rule(
    "EOS311",
    Severity.ERROR,
    f"minBatchesToRetain >= {MIN_BATCHES_TO_VERIFY} (verification)",
    _RETAIN_FIX,
)
def _retained_for_verification(facts: PreflightFacts) -> Outcome:
    retained, where = _batches_to_retain(facts.spec)
    if retained is None:
        return failed(f"{where} is not a 32-bit integer: Spark refuses to start the query")
    if retained < 1:
        return failed(f"{where}: Spark refuses to start the query (minBatchesToRetain has to be positive)")
    if retained < MIN_BATCHES_TO_VERIFY:
        return failed(
            f"{where}: Spark keeps only offsets/P-{retained}..P of the last planned batch P, so after a crash "
            "mid-batch (P = C+1, C the last committed batch) offsets/C-1 is gone: verification cannot check a "
            "group one batch behind (marker C-1) and a rewind to it is refused; verification needs at least "
            f"{MIN_BATCHES_TO_VERIFY}"
        )
    return passed(
        f"{where}: offsets/P-{retained}..P are kept, so verification can read offsets/C-1, offsets/C and "
        "offsets/C+1 even after a crash mid-batch"
    )


@rule(
    "EOS312",
    Severity.WARNING,
    f"minBatchesToRetain >= {MIN_BATCHES_TO_REWIND} (room to rewind)",
    _RETAIN_FIX,
)
def _retained_for_rewind(facts: PreflightFacts) -> Outcome:
    retained, where = _batches_to_retain(facts.spec)
    if retained is None or retained < 1:
        return failed(f"{where} is not a batch count Spark accepts (see EOS311): nothing can be rewound")
    reach = _rewind_reach(retained)
    interval = facts.spec.trigger_interval_ms
    span = f" (about {format_age(reach * interval)} at trigger {facts.spec.trigger!r})" if interval and reach else ""
    reach_text = f"a rewind can go back at most {reach} batch(es){span}" if reach else "no rewind is possible"
    if retained < MIN_BATCHES_TO_REWIND:
        return failed(
            f"{where}: a rewind to batch K needs offsets/K-1, offsets/K and commits/K, and Spark deletes all "
            f"but offsets/P-{retained}..P of the last planned batch P, so after a crash mid-batch "
            f"{reach_text}: output found missing later cannot be replayed; {MIN_BATCHES_TO_REWIND} leaves room for "
            f"{_rewind_reach(MIN_BATCHES_TO_REWIND)}"
        )
    return passed(f"{where}: after a crash mid-batch {reach_text}")
