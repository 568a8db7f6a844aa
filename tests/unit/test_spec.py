"""The pipeline spec: built in Python or loaded from YAML/JSON, every error names the field (and where it is)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
import pytest

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.spec import Mode, PipelineSpec, Writers, load_specs


def minimal(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "orders",
        "kafka": {"bootstrap.servers": "localhost:9092"},
        "input_topics": ["orders.v1-raw"],
        "output_topic": "orders.enriched",
        "group_id": "orders-eos-sink",
        "transactional_id_prefix": "orders-eos",
        "checkpoint_location": "/var/lib/eos/checkpoints/orders",
    }
    data.update(overrides)
    return data


def spec_error(**overrides: Any) -> str:
    with pytest.raises(SpecError) as info:
        PipelineSpec.from_dict(minimal(**overrides))
    assert info.value.fix
    return str(info.value)


# -- construction ------------------------------------------------------------------------------


def test_defaults() -> None:
    spec = PipelineSpec.from_dict(minimal())
    assert spec.trigger == "available_now"
    assert spec.trigger_interval_ms is None
    assert spec.max_offsets_per_trigger == 10000
    assert spec.starting_offsets == "earliest"
    assert spec.transaction_timeout_ms == 60000
    assert spec.transform is None
    assert spec.spark_conf == {}
    assert spec.batch_budget_ms is None
    assert spec.mode == "exactly-once"
    assert spec.dlq_topic is None


def test_constructible_in_python_and_frozen() -> None:
    spec = PipelineSpec(**minimal(dlq_topic="orders.dlq"))
    assert spec.dlq_topic == "orders.dlq"
    with pytest.raises(pydantic.ValidationError):
        spec.name = "other"  # type: ignore[misc]


def test_transactional_id() -> None:
    spec = PipelineSpec.from_dict(minimal())
    assert spec.transactional_id() == "orders-eos-0"
    assert spec.transactional_id(3) == "orders-eos-3"


@pytest.mark.parametrize(
    ("trigger", "ms"),
    [
        ("10 seconds", 10_000),
        ("1 second", 1_000),
        ("500 milliseconds", 500),
        ("1 minute", 60_000),
        ("2 minutes", 120_000),
        ("1 hour", 3_600_000),
        ("1 day", 86_400_000),
        ("0 seconds", 0),
        ("  10   Seconds ", 10_000),
        ("interval 5 seconds", 5_000),
    ],
)
def test_trigger_intervals(trigger: str, ms: int) -> None:
    assert PipelineSpec.from_dict(minimal(trigger=trigger)).trigger_interval_ms == ms


@pytest.mark.parametrize("trigger", ["10s", "ten seconds", "once", "10", "-1 seconds", "1.5 seconds", ""])
def test_bad_trigger_names_value(trigger: str) -> None:
    message = spec_error(trigger=trigger)
    assert f"trigger: trigger {trigger!r}" in message
    assert "available_now" in message


def test_kafka_values_keep_types() -> None:
    spec = PipelineSpec.from_dict(
        minimal(kafka={"bootstrap.servers": "b:9092", "enable.idempotence": True, "linger.ms": 5})
    )
    assert spec.kafka == {"bootstrap.servers": "b:9092", "enable.idempotence": True, "linger.ms": 5}


def test_spark_conf_values_become_strings() -> None:
    spec = PipelineSpec.from_dict(
        minimal(spark_conf={"spark.sql.shuffle.partitions": 4, "spark.speculation": False, "x": "y"})
    )
    assert spec.spark_conf == {"spark.sql.shuffle.partitions": "4", "spark.speculation": "false", "x": "y"}


@pytest.mark.parametrize(
    "starting",
    ["earliest", "latest", '{"orders.v1-raw":{"0":42,"1":-2,"2":-1}}'],
)
def test_starting_offsets(starting: str) -> None:
    assert PipelineSpec.from_dict(minimal(starting_offsets=starting)).starting_offsets == starting


@pytest.mark.parametrize(
    "transform",
    ["spark_jobs.transforms.orders:transform", "m:f", "a.b:Cls.method", "spark_jobsx:f",
     # the deprecated path loads (quietly: DAGs load every spec at each parse); pre-flight EOS319 and the job warn
     "airflow_provider_eos.jobs.transforms.json_enrich:transform"],
)
def test_transform_format(transform: str) -> None:
    assert PipelineSpec.from_dict(minimal(transform=transform)).transform == transform


def test_a_transform_that_is_not_module_function_names_the_example_path() -> None:
    message = spec_error(transform="json_enrich.transform")
    assert "transform 'json_enrich.transform' is not 'module:function'" in message
    assert "'spark_jobs.transforms.json_enrich:transform'" in message


def test_mode_is_the_one_mode_enum() -> None:
    spec = PipelineSpec.from_dict(minimal(mode="at-least-once"))
    assert spec.mode is Mode.AT_LEAST_ONCE and spec.mode == "at-least-once"
    assert spec.to_dict()["mode"] == "at-least-once"
    assert [m.value for m in Mode] == ["exactly-once", "at-least-once"]
    assert [w.value for w in Writers] == ["auto", "driver", "executors"]


# -- serialization -----------------------------------------------------------------------------


def test_to_dict_from_dict_roundtrip() -> None:
    spec = PipelineSpec.from_dict(
        minimal(dlq_topic="orders.dlq", trigger="10 seconds", spark_conf={"a": "b"}, batch_budget_ms=5000)
    )
    assert PipelineSpec.from_dict(spec.to_dict()) == spec
    assert PipelineSpec.from_dict(json.loads(spec.to_json())) == spec
    assert set(spec.to_dict()) == set(PipelineSpec.model_fields)


def test_with_overrides_validates() -> None:
    spec = PipelineSpec.from_dict(minimal())
    changed = spec.with_overrides(trigger="1 minute", group_id="g2")
    assert (changed.trigger_interval_ms, changed.group_id) == (60_000, "g2")
    assert spec.group_id == "orders-eos-sink", "the original is unchanged"
    with pytest.raises(SpecError, match=r"output_topic 'orders\.v1-raw' is also an input topic"):
        spec.with_overrides(output_topic="orders.v1-raw")
    with pytest.raises(SpecError, match="unknown field"):
        spec.with_overrides(grup_id="x")


# -- errors name field, value and fix ----------------------------------------------------------


def test_unknown_field_names_it_and_lists_allowed() -> None:
    message = spec_error(grup_id="x")
    assert "grup_id: unknown field" in message
    assert "did you mean 'group_id'?" in message
    assert "allowed fields: name, kafka, input_topics" in message


def test_missing_field() -> None:
    data = minimal()
    del data["group_id"]
    with pytest.raises(SpecError) as info:
        PipelineSpec.from_dict(data)
    assert "group_id: required field is missing" in str(info.value)
    assert "add group_id" in info.value.fix


def test_all_errors_are_reported_at_once() -> None:
    message = spec_error(name="1bad", trigger="soon", transaction_timeout_ms=0)
    assert "name: name '1bad'" in message
    assert "trigger: trigger 'soon'" in message
    assert "transaction_timeout_ms: transaction_timeout_ms is 0" in message
    assert "pipeline spec" in message


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"name": "has space"}, "name 'has space'"),
        ({"name": ""}, "name ''"),
        ({"kafka": {}}, "kafka['bootstrap.servers'] is None"),
        ({"kafka": {"bootstrap.servers": " "}}, "kafka['bootstrap.servers'] is ' '"),
        ({"kafka": {"bootstrap.servers": "b", "linger.ms": 1.5}}, "kafka['linger.ms'] is a number"),
        ({"kafka": {"bootstrap.servers": "b", "transactional.id": "x"}}, "'transactional.id'"),
        ({"kafka": {"bootstrap.servers": "b", "group.id": "x"}}, "'group.id'"),
        ({"input_topics": []}, "input_topics is empty"),
        ({"input_topics": ["ok", "bad topic"]}, "input topic 'bad topic'"),
        ({"input_topics": ["a", "a"]}, "['a'] more than once"),
        ({"input_topics": [".."]}, "input topic '..'"),
        ({"input_topics": ["x" * 250]}, "is not a valid Kafka topic name"),
        ({"output_topic": "orders.v1-raw"}, "output_topic 'orders.v1-raw' is also an input topic"),
        ({"output_topic": "out/put"}, "output_topic 'out/put'"),
        ({"dlq_topic": "orders.enriched"}, "dlq_topic 'orders.enriched' equals output_topic"),
        ({"dlq_topic": "orders.v1-raw"}, "dlq_topic 'orders.v1-raw' is also an input topic"),
        ({"group_id": ""}, "group_id ''"),
        ({"group_id": " g"}, "group_id ' g'"),
        ({"transactional_id_prefix": "a b"}, "transactional_id_prefix 'a b'"),
        ({"transactional_id_prefix": "x" * 300}, "300 characters"),
        ({"checkpoint_location": ""}, "checkpoint_location ''"),
        ({"checkpoint_location": "checkpoints/orders"}, "checkpoint_location 'checkpoints/orders' is relative"),
        ({"checkpoint_location": "./ck"}, "checkpoint_location './ck' is relative"),
        ({"checkpoint_location": "~/ck"}, "checkpoint_location '~/ck' is relative"),
        ({"checkpoint_location": "hdfs:ck"}, "e.g. 's3a://bucket/checkpoints/orders' or '/var/lib/eos"),
        ({"max_offsets_per_trigger": 0}, "max_offsets_per_trigger is 0"),
        ({"max_offsets_per_trigger": True}, "max_offsets_per_trigger is True"),
        ({"batch_budget_ms": -5}, "batch_budget_ms is -5"),
        ({"transaction_timeout_ms": "soon"}, "transaction_timeout_ms: Input should be a valid integer"),
        ({"starting_offsets": "beginning"}, "starting_offsets 'beginning'"),
        ({"starting_offsets": "[1]"}, "starting_offsets '[1]' must be a JSON object"),
        ({"starting_offsets": '{"other":{"0":1}}'}, "names topic 'other', which is not in input_topics"),
        ({"starting_offsets": '{"orders.v1-raw":{"a":1}}'}, "['orders.v1-raw']['a'] = 1"),
        ({"starting_offsets": '{"orders.v1-raw":{"0":-3}}'}, "['orders.v1-raw']['0'] = -3"),
        ({"starting_offsets": '{"orders.v1-raw":5}'}, "starting_offsets['orders.v1-raw'] is 5"),
        ({"input_topics": ["orders.v1-raw", "payments", "refunds"], "starting_offsets": '{"payments":{"0":5}}'},
         "starting_offsets gives no offsets for input topics ['orders.v1-raw', 'refunds']"),
        ({"transaction_timeout_ms": 2**31}, "transaction_timeout_ms is 2147483648, above the Kafka producer's limit"),
        # librdkafka's producer takes transaction.timeout.ms from 1000: refused at load, not at pre-flight or submit.
        ({"transaction_timeout_ms": 999}, "transaction_timeout_ms is 999; use at least 1000 milliseconds"),
        ({"transaction_timeout_ms": 1}, "transaction.timeout.ms in 1000..2147483647"),
        ({"transaction_timeout_ms": -5}, "transaction_timeout_ms is -5; use at least 1000"),
        ({"transaction_timeout_ms": 2**40}, "transaction.max.timeout.ms"),
        ({"max_offsets_per_trigger": 2**63}, "max_offsets_per_trigger is 9223372036854775808, above Spark's limit"),
        ({"driver_lease_ttl_s": 2}, "driver_lease_ttl_s is 2; use at least 3 seconds"),
        ({"driver_lease_ttl_s": 3601}, "driver_lease_ttl_s is 3601; use at most 3600 seconds (an hour): recovery"),
        ({"driver_lease_ttl_s": 10**9}, "driver_lease_ttl_s is 1000000000; use at most 3600 seconds"),
        ({"driver_lease_ttl_s": 10**9}, "is how long a crashed pipeline stays down"),
        ({"transform": "no_colon"}, "transform 'no_colon'"),
        ({"transform": "a-b:f"}, "transform 'a-b:f'"),
        ({"mode": "exactly_once"}, "mode: Input should be 'exactly-once' or 'at-least-once', got a string"),
        ({"spark_conf": {"a": ["list"]}}, "spark_conf['a']: Input should be a valid string, got a list"),
    ],
)
def test_invalid_values_name_field_and_value(overrides: dict[str, Any], expected: str) -> None:
    assert expected in spec_error(**overrides)


def test_the_largest_values_java_reads_are_accepted() -> None:
    spec = PipelineSpec.from_dict(minimal(transaction_timeout_ms=2**31 - 1, max_offsets_per_trigger=2**63 - 1))
    assert (spec.transaction_timeout_ms, spec.max_offsets_per_trigger) == (2**31 - 1, 2**63 - 1)


def test_the_least_transaction_timeout_librdkafka_takes_is_accepted() -> None:
    assert PipelineSpec.from_dict(minimal(transaction_timeout_ms=1000)).transaction_timeout_ms == 1000


def test_lease_ttls_from_three_seconds_to_an_hour_are_accepted() -> None:
    assert [PipelineSpec.from_dict(minimal(driver_lease_ttl_s=ttl)).driver_lease_ttl_s for ttl in (3, 30, 3600)] == [
        3, 30, 3600]


def test_starting_offsets_naming_every_input_topic_are_accepted() -> None:
    offsets = '{"orders.v1-raw":{"0":-2},"payments":{"0":7,"1":-1}}'
    spec = PipelineSpec.from_dict(minimal(input_topics=["orders.v1-raw", "payments"], starting_offsets=offsets))
    assert spec.starting_offsets == offsets


@pytest.mark.parametrize("location", [
    "/var/lib/eos/checkpoints/orders", "file:///var/lib/eos/ck", "file:/var/lib/eos/ck", "hdfs:///eos/ck",
    "hdfs://namenode:8020/eos/ck", "s3a://bucket/ck", "abfss://c@account.dfs.core.windows.net/ck", "memory://ck",
])
def test_checkpoint_locations_every_process_resolves_alike_are_accepted(location: str) -> None:
    assert PipelineSpec.from_dict(minimal(checkpoint_location=location)).checkpoint_location == location


def test_type_errors_name_path_and_type_not_the_value() -> None:
    # A mistyped value may be a password: the type is named, never the value (issue 23).
    message = spec_error(input_topics=["ok", 5])
    assert "input_topics[1]" in message
    assert "got an integer" in message and "5" not in message.replace("input_topics[1]", "")


def test_not_a_mapping() -> None:
    with pytest.raises(SpecError, match="is a list, not a mapping"):
        PipelineSpec.from_dict(["name", "x"])  # type: ignore[arg-type]


# -- files -------------------------------------------------------------------------------------

YAML_SPEC = """
name: orders
kafka:
  bootstrap.servers: localhost:9092
  enable.idempotence: true
input_topics: [orders.v1-raw, payments]
output_topic: orders.enriched
dlq_topic: orders.dlq
group_id: orders-eos-sink
transactional_id_prefix: orders-eos
checkpoint_location: s3a://bucket/checkpoints/orders
trigger: 10 seconds
spark_conf:
  spark.sql.shuffle.partitions: 8
"""


def test_load_yaml(tmp_path: Path) -> None:
    for suffix in (".yaml", ".yml"):
        path = tmp_path / f"orders{suffix}"
        path.write_text(YAML_SPEC)
        spec = PipelineSpec.load(path)
        assert spec.input_topics == ["orders.v1-raw", "payments"]
        assert spec.kafka["enable.idempotence"] is True
        assert spec.spark_conf == {"spark.sql.shuffle.partitions": "8"}
        assert spec.trigger_interval_ms == 10_000


def test_load_json(tmp_path: Path) -> None:
    path = tmp_path / "orders.json"
    path.write_text(json.dumps(minimal()))
    assert PipelineSpec.load(str(path)) == PipelineSpec.from_dict(minimal())


def test_load_error_names_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "orders.yaml"
    path.write_text(YAML_SPEC.replace("group_id: orders-eos-sink", "group_id: ''"))
    with pytest.raises(SpecError) as info:
        PipelineSpec.load(path)
    assert str(path) in str(info.value)
    assert "pipeline spec 'orders'" in str(info.value)
    assert "group_id (line 9, column 1): group_id ''" in str(info.value)


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("missing.yaml", None, "does not exist"),
        ("spec.txt", "x", "has suffix '.txt'"),
        ("broken.yaml", "name: [unclosed", "is not valid YAML"),
        ("broken.json", "{", "is not valid JSON"),
        ("empty.yaml", "", "is empty"),
        ("list.yaml", "- a\n- b\n", "is a list, not a mapping"),
    ],
)
def test_load_file_problems_name_file(tmp_path: Path, name: str, content: str | None, expected: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(SpecError) as info:
        PipelineSpec.load(path)
    assert expected in str(info.value)
    assert name in str(info.value)
    assert info.value.fix


def test_load_specs_directory(tmp_path: Path) -> None:
    (tmp_path / "b_orders.yaml").write_text(YAML_SPEC)
    (tmp_path / "a_clicks.json").write_text(
        json.dumps(minimal(name="clicks", input_topics=["clicks"], transactional_id_prefix="clicks-eos"))
    )
    (tmp_path / "README.md").write_text("# not a spec")
    (tmp_path / ".hidden.yaml").write_text("not: [valid")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "nested.yaml").write_text("ignored: true")
    assert [s.name for s in load_specs(tmp_path)] == ["clicks", "orders"]


def test_load_specs_error_names_file(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(YAML_SPEC)
    (tmp_path / "bad.yaml").write_text(YAML_SPEC.replace("trigger: 10 seconds", "trigger: often"))
    with pytest.raises(SpecError) as info:
        load_specs(tmp_path)
    assert str(tmp_path / "bad.yaml") in str(info.value)
    assert "'often'" in str(info.value)


def test_load_specs_duplicate_names(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text(YAML_SPEC)
    (tmp_path / "two.yaml").write_text(YAML_SPEC)
    with pytest.raises(SpecError) as info:
        load_specs(tmp_path)
    assert "one.yaml" in str(info.value) and "two.yaml" in str(info.value)
    assert "'orders'" in str(info.value)


def test_load_specs_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="does not exist"):
        load_specs(tmp_path / "nope")


def test_load_specs_empty_directory(tmp_path: Path) -> None:
    assert load_specs(tmp_path) == []


def test_spark_conf_may_not_set_what_the_job_sets_from_the_spec() -> None:
    with pytest.raises(SpecError) as refused:
        PipelineSpec.from_dict(minimal(spark_conf={"spark.sql.streaming.checkpointLocation": "/elsewhere"}))
    assert "'spark.sql.streaming.checkpointLocation' ('/elsewhere')" in str(refused.value)
    assert "set checkpoint_location" in str(refused.value)


def test_starting_offsets_partitions_are_ascii_digits() -> None:
    # Python's int() reads ARABIC-INDIC DIGIT THREE as 3; Spark's JSON reader refuses it when the query starts.
    with pytest.raises(SpecError, match="partitions are"):
        PipelineSpec.from_dict(minimal(starting_offsets='{"orders.v1-raw":{"\u0663":1}}'))
