"""The bench's input: records of about 200 bytes, some with a trace header."""

from __future__ import annotations

import os
from collections.abc import Iterable

#: The header a record of the mixed input carries (a trace id, as instrumented producers add).
TRACE_HEADER = "trace-id"


_PAD_POOL = [os.urandom(96).hex()[:150] for _ in range(256)]


def bench_record(i: int) -> tuple[bytes, bytes]:
    """Input record ``i``: key ``u<nnn>``, a JSON value of about 200 bytes (half random hex)."""
    key = b"u%03d" % (i % 997)
    value = b'{"id":%d,"user":"u%03d","amount":%d.%02d,"note":"%s"}' % (
        i, i % 997, i % 5000, i % 100, _PAD_POOL[i % 256][: 150 - len(str(i))].encode())
    return key, value


def bench_records(count: int, start: int = 0) -> list[tuple[bytes, bytes]]:
    return [bench_record(i) for i in range(start, start + count)]


def record_bytes(records: Iterable[tuple[bytes, bytes]]) -> int:
    return sum(len(k) + len(v) for k, v in records)
