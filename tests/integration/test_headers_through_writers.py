"""Input records that carry Kafka headers on some rows only (the mix users have) come out exact on both writers.

The writers hand the output's columns to ``mapInArrow`` (the executor writers' tasks, the driver
writer's spill); a headers column null on most rows once made that conversion quadratic, and the
fix changes how headers travel to Python. This is the guard: every record once, its headers
byte for byte (a header with a null value included), dead letters with theirs plus the sink's.

The transform returns key and value as strings: the JVM executor writer reads them from the
transform's rows as they are, the other writers cast them; all write the same bytes.
"""

from __future__ import annotations

from collections import Counter

import pytest
from confluent_kafka import Producer

from tests.support.kafka import client_settings, consume_all
from tests.support.pipeline import PipelineHarness, writers_of

pytestmark = [pytest.mark.integration, pytest.mark.spark]

RECORDS = 1200


def _record(i: int) -> tuple[bytes, bytes, list[tuple[str, bytes | None]] | None]:
    value = b"bad-%d" % i if i % 37 == 5 else b'{"n":%d}' % i
    if i % 10 == 3:
        headers = [("trace", b"t-%d" % i), ("empty", None), ("bytes", bytes(range(i % 7, i % 7 + 5)))]
    elif i % 10 == 7:
        headers = [("trace", b"t-%d" % i)]
    else:
        headers = None
    return b"k%d" % (i % 13), value, headers


def _produce(harness: PipelineHarness) -> None:
    producer = Producer({**client_settings(harness.bootstrap), "linger.ms": 5})
    for i in range(RECORDS):
        key, value, headers = _record(i)
        producer.produce(harness.input_topic, value=value, key=key, headers=headers, partition=i % 2)
    assert producer.flush(30) == 0


def _as_written(message) -> tuple:
    return message.key(), message.value(), tuple(message.headers() or ())


#: "executors" is the default executor writer (the JVM's); "executors/python" the PySpark workers' one,
#: whose fast positional produce a batch without headers takes.
@pytest.mark.parametrize("writers", ["driver", "executors", "executors/python"])
def test_mixed_headers_pass_through_exactly_on_both_writers(bootstrap, tmp_path, writers):
    harness = PipelineHarness(bootstrap, tmp_path, **writers_of(writers),
                              transform="tests.support.transforms:headers_kept_bad_to_dlq")
    _produce(harness)

    result = harness.run()
    assert result.returncode == 0, result.log[-3000:]

    expected = [_record(i) for i in range(RECORDS)]
    good = Counter((k, v, tuple(h or ())) for k, v, h in expected if not v.startswith(b"bad"))
    bad = Counter((k, v, tuple(h or ())) for k, v, h in expected if v.startswith(b"bad"))
    output = Counter(_as_written(m) for m in consume_all(harness.bootstrap, harness.output_topic))
    assert output == good, (sum(output.values()), sum(good.values()))
    dead = consume_all(harness.bootstrap, harness.dlq_topic)
    # A dead letter keeps its own headers first, then the sink's reason and origin.
    own = Counter((m.key(), m.value(), tuple(h for h in m.headers() if not h[0].startswith("eos."))) for m in dead)
    assert own == bad
    assert all(dict(m.headers())["eos.dlq.reason"] == b"value starts with bad" for m in dead)
