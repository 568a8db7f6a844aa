"""EOS313-EOS318: the writers (docs/architecture.md: writers, pre-flight), as far as they can be told without Spark.

Whether a plan is partition-aligned is decided by the job at start, from the executed plan. Before
that, pre-flight can still tell: executor writers asked for outside the exactly-once mode; a
transform that declares itself stateful (:func:`~airflow_provider_eos.core.transform_traits.
stateful_transform`) under ``writers: executors``; what the executor writers cost in transaction
markers; a writer recorded in the checkpoint that the spec no longer asks for; a driver writer
whose tasks would spill where the driver cannot read (a one-host path on a cluster master); and
the JVM executor writer's jar where the job is submitted from.

**Control records.** Every transaction writes one marker (a control record) into each partition
it touched, the sink group's ``__consumer_offsets`` partition included. The driver writer's one
transaction per batch writes ``O + 1`` of them (``O`` output partitions). The executor writers
run one transaction per input partition, so a batch costs up to ``I x (O + 1)`` markers (``I``
input partitions with data; ``I x D`` more when dead letters reach all ``D`` partitions of the
dead-letter topic). Markers take log space, replication and a consumer's reads like records, and
they are written per batch, not per record: they matter when a batch is small next to them. The
rule compares them with the largest batch the spec allows (``max_offsets_per_trigger``), the
most favourable case: above :data:`CONTROL_RECORD_SHARE_LIMIT` of it, it warns.
"""

from __future__ import annotations

from airflow_provider_eos.core.checkpoint.webhdfs import is_hdfs_location
from airflow_provider_eos.core.preflight.facts import PreflightFacts
from airflow_provider_eos.core.preflight.locations import is_host_local, is_local_master
from airflow_provider_eos.core.preflight.rule import Outcome, Severity, failed, not_checked, passed, rule, unknown
from airflow_provider_eos.core.spec import ExecutorWriter, Mode, PipelineSpec, Writers

__all__ = ["CONTROL_RECORD_SHARE_LIMIT", "control_records_per_batch"]

#: EOS315 warns when the executor writers' transaction markers per batch exceed this share of the
#: records of a full batch (``max_offsets_per_trigger``): one marker per ten records read.
CONTROL_RECORD_SHARE_LIMIT = 0.10

_DRIVER = "`writers: driver` (one transaction per batch on the driver; it works for any plan)"


def control_records_per_batch(input_partitions: int, output_partitions: int, dlq_partitions: int = 0) -> int:
    """The executor writers' transaction markers in a batch where every input partition has data.

    One transaction per input partition, each marking the output (and dead-letter) partitions it
    wrote and the sink group's offsets partition.
    """
    return input_partitions * (output_partitions + dlq_partitions + 1)


def _executors_requested(spec: PipelineSpec) -> bool:
    return spec.writers is Writers.EXECUTORS


@rule(
    "EOS313",
    Severity.ERROR,
    "executor writers run in exactly-once mode",
    "set mode: exactly-once to use the executor writers, or remove `writers: executors` to run Spark's "
    "at-least-once writer on purpose",
)
def _executors_mode(facts: PreflightFacts) -> Outcome:
    spec = facts.spec
    if _executors_requested(spec) and spec.mode is not Mode.EXACTLY_ONCE:
        return failed(
            f"writers is 'executors' but mode is {spec.mode.value!r}: the executor writers are the exactly-once "
            "sink (one transaction per input partition), while at-least-once runs Spark's built-in Kafka writer, "
            "so the spec's writers would be ignored and every replay would duplicate output"
        )
    return passed(f"writers {spec.writers.value!r} with mode {spec.mode.value!r}")


@rule(
    "EOS314",
    Severity.ERROR,
    "executor writers with a stateless transform",
    f"use {_DRIVER}, or `writers: auto`, which picks the driver writer for a stateful plan",
)
def _stateless_transform(facts: PreflightFacts) -> Outcome:
    spec = facts.spec
    traits = facts.transform_traits
    if spec.writers is Writers.DRIVER:
        return passed("writers is 'driver': one transaction per batch works for any transform")
    if spec.writers is Writers.AUTO:
        stateful = traits is not None and traits.stateful
        return passed(
            "writers is 'auto': the job picks the writer from the executed plan at start"
            + (f" (the transform declares itself stateful: {traits.evidence}; it will be the driver writer)"
               if stateful and traits is not None else "")
        )
    if spec.transform is None:
        return passed("writers is 'executors' with the identity transform, which is stateless")
    if traits is None:
        return unknown(facts, "transform_traits", f"the stateful_transform marker of transform {spec.transform!r}")
    if traits.stateful:
        return failed(
            f"writers is 'executors' but transform {spec.transform!r} declares itself stateful ({traits.evidence}): "
            "executor writers need every Spark task to hold the rows of one input partition, which a stateful plan "
            "(windows, aggregations, deduplication, stream-stream joins) never gives; the job would refuse to start"
        )
    return passed(
        f"transform {spec.transform!r} does not declare itself stateful ({traits.evidence}); the job still checks "
        "the executed plan at start and names any operator that breaks partition alignment"
    )


def _partitions(facts: PreflightFacts, topics: list[str]) -> int | None:
    """The total partition count of ``topics``; ``None`` when one of them was not read or does not exist."""
    assert facts.topics is not None
    total = 0
    for name in topics:
        found = facts.topics.get(name)
        if found is None or not found.exists or found.partitions is None:
            return None
        total += found.partitions
    return total


@rule(
    "EOS315",
    Severity.WARNING,
    "control records of the executor writers",
    f"run fewer, larger batches (raise max_offsets_per_trigger and the trigger interval) so the markers are "
    f"amortized over more records, or use {_DRIVER}",
)
def _control_records(facts: PreflightFacts) -> Outcome:
    spec = facts.spec
    traits = facts.transform_traits
    if spec.writers is Writers.DRIVER:
        return passed("writers is 'driver': one transaction per batch, one marker per partition it wrote")
    if spec.writers is Writers.AUTO and traits is not None and traits.stateful:
        return passed("writers is 'auto' and the transform declares itself stateful: the job uses the driver writer")
    if facts.topics is None:
        return unknown(facts, "topics", "the topics' partition counts were")
    inputs = _partitions(facts, spec.input_topics)
    outputs = _partitions(facts, [spec.output_topic])
    dlq = _partitions(facts, [spec.dlq_topic]) if spec.dlq_topic else 0
    if inputs is None or outputs is None or dlq is None:
        return not_checked("not checked: a topic of the pipeline is missing or its partitions were not read (EOS2xx)")
    per_batch = control_records_per_batch(inputs, outputs)
    worst = control_records_per_batch(inputs, outputs, dlq)
    counted = (
        f"{inputs} input partition(s) x ({outputs} output partition(s) + 1 offsets partition) = {per_batch} "
        "transaction markers per batch"
        + (f" (up to {worst} with dead letters in all {dlq} dead-letter partition(s))" if dlq else "")
    )
    driver = f" (the driver writer: {outputs + 1})"
    when = "if `auto` picks the executor writers (a partition-aligned plan): " if spec.writers is Writers.AUTO else ""
    cap = spec.max_offsets_per_trigger
    if cap is None:
        return not_checked(
            f"not checked: max_offsets_per_trigger is null, so a batch's size is unknown (EOS304); "
            f"{when}{counted}{driver}"
        )
    share = per_batch / cap
    compared = (
        f"{when}{counted}, against at most {cap} records per batch (max_offsets_per_trigger): {share:.1%} of a full "
        f"batch{driver}"
    )
    if share > CONTROL_RECORD_SHARE_LIMIT:
        return failed(f"{compared}, above {CONTROL_RECORD_SHARE_LIMIT:.0%}; smaller batches cost more")
    return passed(f"{compared}, within {CONTROL_RECORD_SHARE_LIMIT:.0%}")


@rule(
    "EOS316",
    Severity.WARNING,
    "the writer recorded in the checkpoint is the spec's",
    "nothing to change if the switch is intended: the job records the new writer when it starts. Before that, "
    "run `eos verify --spec FILE`: a batch in flight is judged by the recorded writer, and "
    "`eos abort --spec FILE --execute` aborts transactions it left open under the prefix",
)
def _recorded_writers(facts: PreflightFacts) -> Outcome:
    spec = facts.spec
    checkpoint = facts.checkpoint
    recorded = None if checkpoint is None else checkpoint.writers_choice
    if spec.writers is Writers.AUTO:
        last = (
            f"; the query chose {recorded.writers.value!r} at batch {recorded.batch_id} ({recorded.reason})"
            if recorded is not None else ""
        )
        return passed(f"writers is 'auto': the job decides at every start and records its choice{last}")
    if checkpoint is None:
        return unknown(facts, "checkpoint", "the checkpoint was")
    if "writers_choice" in facts.unavailable:
        return unknown(facts, "writers_choice", "the checkpoint's writers record (eos/writers.json) was")
    if recorded is None:
        return passed(f"writers is {spec.writers.value!r}; the checkpoint records no writer yet")
    if recorded.writers is spec.writers:
        return passed(f"writers is {spec.writers.value!r}, as the checkpoint records (batch {recorded.batch_id})")
    planned, committed = checkpoint.last_planned, checkpoint.last_committed
    writer = "executor writers" if recorded.writers is Writers.EXECUTORS else "driver writer"
    in_flight = (
        f"; batch {planned} is in flight (planned, not committed) and was written by the {writer}"
        if planned is not None and (committed is None or planned > committed) else ""
    )
    why = recorded.reason + (f", {recorded.operator}" if recorded.operator else "")
    return failed(
        f"the checkpoint records writers {recorded.writers.value!r} (requested {recorded.requested.value!r}, decided "
        f"at batch {recorded.batch_id}: {why}) but the spec says {spec.writers.value!r}: the job decides "
        f"again at start and records {spec.writers.value!r}; until then verification, health and the repairs judge "
        f"the checkpoint by the recorded {recorded.writers.value!r}{in_flight}"
    )


@rule(
    "EOS317",
    Severity.ERROR,
    "the driver writer's spill reaches the checkpoint",
    "put checkpoint_location on storage every cluster node reaches (hdfs://, s3a://, gs://, abfss://), use "
    "`writers: executors` with a partition-aligned transform, or run with a local[...] master",
)
def _driver_writer_storage(facts: PreflightFacts) -> Outcome:
    # The driver writer's tasks write the batch's output under the checkpoint and the driver reads
    # it back (design note 39): the executors open the checkpoint with the driver's own options, so
    # only a path on one host's disk can be a place the driver cannot read what they wrote.
    spec, master = facts.spec, facts.master
    location = spec.checkpoint_location
    if spec.mode is not Mode.EXACTLY_ONCE or spec.writers is Writers.EXECUTORS:
        return passed(f"mode {spec.mode.value!r}, writers {spec.writers.value!r}: no driver writer spills; "
                      f"checkpoint {location!r}")
    if is_hdfs_location(location):
        return passed(f"checkpoint {location!r} is on hdfs://: the driver writer's tasks spill under it over "
                      "WebHDFS, at the address and as the user the driver reads it with")
    if not is_host_local(location):
        return passed(f"checkpoint {location!r} is shared storage: the driver writer's tasks spill under it "
                      "with the driver's storage options")
    if master is None:
        return not_checked(f"not checked: checkpoint {location!r} is a local path and no Spark master is given "
                           "(pass master / --master, or set spark.master in spark_conf)")
    if is_local_master(master):
        return passed(f"master {master!r} runs the driver writer's tasks on this host, where {location!r} is")
    return failed(
        f"writers is {spec.writers.value!r} and checkpoint {location!r} is a path on one host, but master {master!r} "
        "runs the driver writer's tasks on cluster nodes: they would spill the batch onto their own disks, "
        "where the driver cannot read it"
    )


@rule(
    "EOS318",
    Severity.ERROR,
    "the jvm/ module's jar (the plan reader, the JVM writer) is installed where the job is submitted from",
    "run `make install` (or `eos jars`) in a checkout of airflow-provider-eos or install the wheel, which carries "
    "the jar; or set `writers: driver` with `executor_writer: python`, which need neither",
)
def _executor_writer_jar(facts: PreflightFacts) -> Outcome:
    spec = facts.spec
    if not spec.ships_jvm_jar():
        if spec.mode is not Mode.EXACTLY_ONCE:
            return passed(f"mode {spec.mode.value!r}: no JVM writer runs and no plan is read, no jar to ship")
        return passed("writers is 'driver' and executor_writer is 'python': no plan is read and no JVM writer runs, "
                      "no jar to ship")
    if facts.executor_writer_jar is not None:
        return passed(f"the jar is {facts.executor_writer_jar}")
    reason = facts.unavailable.get("executor_writer_jar")
    if reason is None:
        return not_checked("not checked: where the jvm/ module's jar is was not read")
    uses = [f"writers {spec.writers.value!r} reads the batch's plan"] if spec.writers is not Writers.DRIVER else []
    if spec.executor_writer is ExecutorWriter.JVM:
        uses.append("executor_writer 'jvm' (the default) runs the JVM writer")
    return failed(f"{' and '.join(uses)} with the jar, but {reason}: spark-submit would refuse to start the job")
