"""EOS313-EOS318: the writers, told without Spark (and EOS319, the transform's module path); pass on good facts and
fail naming the values."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from airflow_provider_eos.core.preflight import (
    CONTROL_RECORD_SHARE_LIMIT,
    CheckpointFacts,
    PreflightFacts,
    Status,
    control_records_per_batch,
    evaluate,
)
from airflow_provider_eos.core.spec import Writers
from airflow_provider_eos.core.transform_traits import TransformTraits
from airflow_provider_eos.core.writers_choice import WritersChoice
from tests.unit.preflight.builders import (
    QUERY,
    Case,
    Mutation,
    assert_fails,
    assert_passes,
    case_id,
    facts_,
    good_facts,
    spec,
    topic,
)

FRAUD = "spark_jobs.transforms.fraud_alerts:transform"
ENRICH = "spark_jobs.transforms.json_enrich:transform"
OLD_ENRICH = "airflow_provider_eos.jobs.transforms.json_enrich:transform"
STATEFUL = TransformTraits(
    reference=FRAUD, stateful=True, evidence="transform in fraud_alerts.py: @stateful_transform"
)
STATELESS = TransformTraits(
    reference=ENRICH, stateful=False, evidence="transform in json_enrich.py: no @stateful_transform"
)


def choice(writers: Writers, *, requested: Writers = Writers.AUTO, operator: str | None = None) -> WritersChoice:
    return WritersChoice(
        writers=writers,
        requested=requested,
        reason="plan is partition-aligned" if writers is Writers.EXECUTORS else "plan is not partition-aligned",
        operator=operator,
        query_id=QUERY,
        batch_id=0,
        decided_at=dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC),
    )


def then(*mutations: Mutation) -> Mutation:
    def apply(facts: PreflightFacts) -> PreflightFacts:
        for mutate in mutations:
            facts = mutate(facts)
        return facts

    return apply


def recorded(writers: Writers, *, planned: int = 3, operator: str | None = None) -> Mutation:
    """The checkpoint (last committed 3, last planned ``planned``) records ``writers``."""
    return facts_(
        checkpoint=CheckpointFacts(
            "s3a://bucket/checkpoints/orders", True, QUERY, 3, planned, choice(writers, operator=operator)
        )
    )


def partitions(inputs: int, outputs: int, dlq: int = 4) -> Mutation:
    return then(topic("orders-in", partitions=inputs), topic("orders-out", partitions=outputs),
                topic("orders-dlq", partitions=dlq))


executors = spec(writers="executors")
no_jar = facts_(executor_writer_jar=None,
                unavailable={"executor_writer_jar": "the JVM executor writer's jar /x.jar is not built from /src/jvm"})
executors_fraud = spec(writers="executors", transform=FRAUD)
HDFS = "hdfs://127.0.0.1:9000/eos/checkpoints/orders"
LOCAL = "/srv/eos/checkpoints/orders"

PASSES: list[Case] = [
    ("EOS313", executors, ["'executors'", "'exactly-once'"]),
    # auto (or driver) with at-least-once: EOS309 warns about the mode; the writers do not matter.
    ("EOS313", spec(mode="at-least-once"), ["'auto'", "'at-least-once'"]),
    ("EOS314", then(spec(writers="driver", transform=FRAUD), facts_(transform_traits=STATEFUL)), ["any transform"]),
    ("EOS314", then(spec(transform=FRAUD), facts_(transform_traits=STATEFUL)),
     ["'auto'", "declares itself stateful", "fraud_alerts.py", "driver writer"]),
    ("EOS314", executors, ["identity transform"]),
    ("EOS314", then(spec(writers="executors", transform=ENRICH), facts_(transform_traits=STATELESS)),
     ["does not declare itself stateful", "json_enrich.py", "executed plan"]),
    # The good facts: 4 inputs x (4 outputs + 1) = 20 markers, 0.2% of 10000 records.
    ("EOS315", executors, ["4 input partition(s) x (4 output partition(s) + 1 offsets partition) = 20",
                           "up to 36", "10000 records", "0.2%", "(the driver writer: 5)"]),
    ("EOS315", lambda f: f, ["if `auto` picks the executor writers", "= 20"]),
    ("EOS315", then(spec(writers="driver"), partitions(64, 64)), ["'driver'"]),
    ("EOS315", then(spec(transform=FRAUD), facts_(transform_traits=STATEFUL), partitions(64, 64)),
     ["declares itself stateful", "driver writer"]),
    # Exactly at the limit: 10 x (9 + 1) = 100 of 1000 records.
    ("EOS315", then(spec(writers="executors", max_offsets_per_trigger=1000), partitions(10, 9)), ["= 100", "10.0%"]),
    ("EOS316", then(executors, recorded(Writers.EXECUTORS)), ["as the checkpoint records (batch 0)"]),
    ("EOS316", spec(writers="driver"), ["'driver'", "records no writer yet"]),
    ("EOS316", then(spec(writers="driver"), facts_(checkpoint=CheckpointFacts("s3a://x", False))),
     ["records no writer yet"]),
    ("EOS316", recorded(Writers.EXECUTORS), ["'auto'", "decides at every start", "chose 'executors' at batch 0"]),
    # auto needs no fact: the job decides at start anyway.
    ("EOS316", facts_(checkpoint=None), ["'auto'"]),
    ("EOS317", spec(writers="driver"), ["'s3a://bucket/checkpoints/orders' is shared storage",
                                        "with the driver's storage options"]),
    # hdfs:// with the driver writer (design note 39): the tasks spill over the driver's WebHDFS address.
    ("EOS317", spec(writers="driver", checkpoint_location=HDFS), [f"{HDFS!r} is on hdfs://", "over WebHDFS",
                                                                  "as the user the driver reads it with"]),
    ("EOS317", then(spec(checkpoint_location=HDFS, transform=FRAUD), facts_(transform_traits=STATEFUL)),
     ["is on hdfs://", "over WebHDFS"]),
    ("EOS317", spec(writers="executors", checkpoint_location=LOCAL),
     ["writers 'executors'", "no driver writer spills"]),
    ("EOS317", spec(mode="at-least-once", checkpoint_location=LOCAL), ["'at-least-once'", "no driver writer spills"]),
    ("EOS317", then(spec(checkpoint_location=LOCAL), facts_(master="local[2]")),
     ["master 'local[2]' runs the driver writer's tasks on this host"]),
    ("EOS318", lambda f: f, ["the jar is /opt/eos/jars/"]),
    ("EOS318", then(spec(writers="driver", executor_writer="python"), no_jar),
     ["writers is 'driver' and executor_writer is 'python'", "no jar to ship"]),
    ("EOS318", then(spec(mode="at-least-once"), no_jar), ["'at-least-once'", "no JVM writer runs", "no plan is read"]),
    ("EOS319", spec(transform=ENRICH), [f"transform {ENRICH!r}"]),
    ("EOS319", spec(transform=None), ["the identity transform"]),
]

FAILS: list[Case] = [
    ("EOS313", spec(writers="executors", mode="at-least-once"),
     ["'executors'", "'at-least-once'", "built-in Kafka writer", "duplicate"]),
    ("EOS314", then(executors_fraud, facts_(transform_traits=STATEFUL)),
     [f"transform {FRAUD!r} declares itself stateful", "@stateful_transform", "refuse to start"]),
    # 16 x (16 + 1) = 272 markers against 1000 records: 27.2% of a full batch.
    ("EOS315", then(spec(writers="executors", max_offsets_per_trigger=1000), partitions(16, 16)),
     ["16 input partition(s) x (16 output partition(s) + 1 offsets partition) = 272", "up to 336",
      "(the driver writer: 17)", "27.2%", "above 10%"]),
    ("EOS315", then(spec(max_offsets_per_trigger=10000), partitions(64, 64, dlq=1)),
     ["if `auto` picks the executor writers", "= 4160", "up to 4224", "41.6%"]),
    # A plan that is not aligned: recorded driver (auto, stateful operator); the spec now asks for executors.
    ("EOS316", then(executors, recorded(Writers.DRIVER, operator="StateStoreSaveExec")),
     ["records writers 'driver'", "requested 'auto'", "plan is not partition-aligned, StateStoreSaveExec",
      "the spec says 'executors'",
      "decides again at start", "judge the checkpoint by the recorded 'driver'"]),
    ("EOS316", then(spec(writers="driver"), recorded(Writers.EXECUTORS, planned=4)),
     ["records writers 'executors'", "the spec says 'driver'", "batch 4 is in flight",
      "written by the executor writers"]),
    ("EOS317", then(spec(checkpoint_location=LOCAL, writers="driver"), facts_(master="yarn")),
     ["writers is 'driver'", f"checkpoint {LOCAL!r} is a path on one host", "master 'yarn'",
      "onto their own disks, where the driver cannot read it"]),
    ("EOS318", then(spec(writers="executors"), no_jar),
     ["writers 'executors' reads the batch's plan", "and executor_writer 'jvm' (the default)",
      "is not built from /src/jvm", "spark-submit would refuse"]),
    # The driver writer's spill tasks are the jar's too.
    ("EOS318", then(spec(writers="driver"), no_jar), ["executor_writer 'jvm' (the default) runs the JVM writer",
                                                       "spark-submit would refuse"]),
    # The Python workers' executor writers still need the plan reader.
    ("EOS318", then(spec(executor_writer="python"), no_jar), ["writers 'auto' reads the batch's plan with the jar",
                                                               "spark-submit would refuse"]),
    # The deprecated path still runs: a WARNING naming the old path and the new one, never a failed pre-flight.
    ("EOS319", spec(transform=OLD_ENRICH),
     [f"transform {OLD_ENRICH!r} names the deprecated module path 'airflow_provider_eos.jobs'", f"write {ENRICH!r}"]),
]


@pytest.mark.parametrize("case", PASSES, ids=case_id)
def test_rule_passes(case: Case) -> None:
    assert_passes(case)


@pytest.mark.parametrize("case", FAILS, ids=case_id)
def test_rule_fails_naming_the_values(case: Case) -> None:
    assert_fails(case)


def finding(facts: PreflightFacts, code: str):
    return evaluate(facts).finding(code)


def test_the_stateful_marker_unknown_under_executors_is_not_checked_with_the_reason() -> None:
    facts = executors_fraud(good_facts())
    facts = dataclasses.replace(facts, unavailable={"transform_traits": "transform module 'x' cannot be read"})
    result = finding(facts, "EOS314")
    assert result.status is Status.NOT_CHECKED and result.fix is None
    assert result.message.startswith("not checked") and "cannot be read" in result.message


def test_the_control_records_need_the_partition_counts_and_a_batch_size() -> None:
    no_topics = dataclasses.replace(executors(good_facts()), topics=None)
    assert finding(no_topics, "EOS315").status is Status.NOT_CHECKED
    missing = topic("orders-out", exists=False, partitions=None)(executors(good_facts()))
    assert "missing" in finding(missing, "EOS315").message
    unbounded = spec(writers="executors", max_offsets_per_trigger=None)(good_facts())
    result = finding(unbounded, "EOS315")
    assert result.status is Status.NOT_CHECKED
    assert "max_offsets_per_trigger is null" in result.message and "= 20 transaction markers" in result.message


def test_a_recorded_writer_that_cannot_be_read_is_not_checked() -> None:
    unreadable = dataclasses.replace(
        spec(writers="driver")(good_facts()), unavailable={"writers_choice": "eos/writers.json is not a record"}
    )
    result = finding(unreadable, "EOS316")
    assert result.status is Status.NOT_CHECKED and "eos/writers.json is not a record" in result.message
    assert finding(dataclasses.replace(spec(writers="driver")(good_facts()), checkpoint=None),
                   "EOS316").status is Status.NOT_CHECKED


def test_control_records_per_batch_is_input_times_output_plus_the_offsets_partition() -> None:
    # The bench's 4x4 and 16x16 layouts (docs/architecture.md, executor writers, issue 10).
    assert control_records_per_batch(4, 4) == 20
    assert control_records_per_batch(16, 16) == 272
    assert control_records_per_batch(16, 16, 2) == 304
    assert control_records_per_batch(1, 1) == 2
    assert CONTROL_RECORD_SHARE_LIMIT == 0.10


def test_the_writers_rules_are_catalogued_with_their_severities() -> None:
    report = evaluate(good_facts())
    codes = {"EOS313", "EOS314", "EOS315", "EOS316", "EOS317", "EOS318"}
    severities = {f.code: f.severity.value for f in report.findings if f.code in codes}
    assert severities == {"EOS313": "ERROR", "EOS314": "ERROR", "EOS315": "WARNING", "EOS316": "WARNING",
                          "EOS317": "ERROR", "EOS318": "ERROR"}


def test_the_jar_not_looked_for_is_not_checked() -> None:
    result = finding(dataclasses.replace(good_facts(), executor_writer_jar=None), "EOS318")
    assert result.status is Status.NOT_CHECKED


def test_the_deprecated_transform_path_warns_and_its_fix_is_the_new_path() -> None:
    report = evaluate(spec(transform=OLD_ENRICH)(good_facts()))
    result = report.finding("EOS319")
    assert result.severity.value == "WARNING" and result.status is Status.FAIL
    assert result.fix == f"write transform: {ENRICH} in the spec"
    assert report.ok and result in report.warnings


def test_the_driver_writers_spill_on_a_local_path_without_a_master_is_not_checked() -> None:
    finding = evaluate(spec(checkpoint_location=LOCAL)(dataclasses.replace(good_facts(), master=None))).finding(
        "EOS317")
    assert finding.status is Status.NOT_CHECKED and "no Spark master is given" in finding.message
