"""What both writers produce for a row: topic, key, value and headers, dead letters included."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_eos.core.errors import SinkError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.spark.record_producer import dead_letters, produce_rows, require_dlq_topic


class RecordingProducer:
    def __init__(self, full_once: bool = False) -> None:
        self.sent: list[tuple] = []
        self.full_once = full_once

    def produce(self, topic, value=None, key=None, headers=None) -> None:
        if self.full_once:
            self.full_once = False
            raise BufferError("queue full")
        self.sent.append((topic, key, value, headers))

    def poll(self, timeout: float) -> int:
        return 0


def _spec(dlq: str | None = "dlq") -> PipelineSpec:
    return PipelineSpec(name="p", kafka={"bootstrap.servers": "x:1"}, input_topics=["in"], output_topic="out",
                        dlq_topic=dlq, group_id="g", transactional_id_prefix="t", checkpoint_location="/tmp/c")


def test_output_and_dead_letters_with_their_headers() -> None:
    rows = pa.RecordBatch.from_pydict({
        "key": [b"a", b"b"], "value": [b"1", b"2"],
        "headers": [[{"key": "h", "value": b"x"}], None],
        "dlq_reason": [None, "not JSON"], "topic": ["in", "in"], "partition": [3, 3], "offset": [10, 11],
    })
    producer = RecordingProducer(full_once=True)
    assert produce_rows(producer, _spec(), rows) == (1, 1)
    assert producer.sent == [
        ("out", b"a", b"1", [("h", b"x")]),
        ("dlq", b"b", b"2", [("eos.dlq.reason", b"not JSON"), ("eos.source.topic", b"in"),
                              ("eos.source.partition", b"3"), ("eos.source.offset", b"11")]),
    ]
    assert dead_letters(rows) == 1


def test_rows_without_optional_columns_carry_no_headers() -> None:
    producer = RecordingProducer()
    rows = pa.table({"key": [None], "value": [b"v"]})
    assert produce_rows(producer, _spec(), rows) == (1, 0)
    assert producer.sent == [("out", None, b"v", None)] and dead_letters(rows) == 0


def test_dead_letters_without_a_dlq_topic_are_refused_naming_the_fix() -> None:
    with pytest.raises(SinkError) as raised:
        require_dlq_topic(_spec(dlq=None), 2)
    assert "2 dead-letter row(s)" in raised.value.message and "dlq_topic" in raised.value.fix
    require_dlq_topic(_spec(dlq=None), 0)


def test_plain_rows_keep_their_order_and_survive_a_full_queue() -> None:
    # No headers and no dead letter (a dlq_reason column that is all null included): the plain loop.
    producer = RecordingProducer(full_once=True)
    rows = pa.table({"key": [b"k1", None, b"k3"], "value": [b"1", b"2", None],
                     "dlq_reason": pa.array([None, None, None], pa.string())})
    assert produce_rows(producer, _spec(), rows) == (3, 0)
    assert producer.sent == [("out", b"k1", b"1", None), ("out", None, b"2", None), ("out", b"k3", None, None)]


HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


class PlainOnlyProducer(RecordingProducer):
    """Takes positional calls only: the fast path's (keyword calls fail)."""

    def produce(self, topic, value=None, key=None, **keywords) -> None:
        assert not keywords, keywords
        super().produce(topic, value, key)


def test_a_batch_whose_rows_carry_no_headers_takes_the_plain_loop() -> None:
    # What output_frame hands over for records without headers: empty arrays, never nulls.
    producer = PlainOnlyProducer()
    rows = pa.RecordBatch.from_pydict({"key": [b"a", b"b"], "value": [b"1", b"2"],
                                       "headers": pa.array([[], []], HEADERS_TYPE)})
    assert produce_rows(producer, _spec(), rows) == (2, 0)
    assert producer.sent == [("out", b"a", b"1", None), ("out", b"b", b"2", None)]


def test_mixed_rows_keep_their_own_headers_null_values_included() -> None:
    producer = RecordingProducer()
    rows = pa.RecordBatch.from_pydict({
        "key": [b"a", b"b", b"c", b"d"], "value": [b"1", b"2", b"3", b"4"],
        "headers": pa.array([[], [{"key": "h", "value": None}, {"key": "t", "value": b"\x00\xff"}], None, []],
                            HEADERS_TYPE)})
    assert produce_rows(producer, _spec(), rows) == (4, 0)
    assert producer.sent == [("out", b"a", b"1", None), ("out", b"b", b"2", [("h", None), ("t", b"\x00\xff")]),
                             ("out", b"c", b"3", None), ("out", b"d", b"4", None)]


@pytest.mark.parametrize(("header", "found"), [
    ({"key": None, "value": b"x"}, "a header whose key is null"),
    (None, "a null header"),
])
def test_a_header_without_a_key_fails_the_batch_naming_it_and_produces_nothing(header, found) -> None:
    # The column's type allows both; Kafka's headers always have a key (the JVM writer refuses them the same way).
    producer = RecordingProducer()
    rows = pa.RecordBatch.from_pydict({"key": [b"a", b"b"], "value": [b"1", b"2"],
                                       "headers": pa.array([[], [header]], HEADERS_TYPE)})
    with pytest.raises(SinkError) as refused:
        produce_rows(producer, _spec(), rows)
    assert f"returned a row whose headers hold {found}" in refused.value.message
    assert "drop or fill such headers" in refused.value.fix
    assert producer.sent == []
