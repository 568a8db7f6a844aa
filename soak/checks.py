"""Exactly-once and per-key order over a phase's output, fed one record at a time (a million records
would not fit in memory as message objects).

Pure: :class:`OutputCheck` takes (output partition, value) pairs in offset order per partition and
the number of records produced; :func:`dlq_check` compares dead letters with the malformed inputs;
:func:`verdict_ok` says whether a recovery's verification verdict is one the pipeline may continue from.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from soak.data import is_malformed, parse_id

#: Verdicts after which the DAG restarts the job (``nothing committed``: the first batch never committed).
CONTINUE_VERDICTS = frozenset({"IN_SYNC", "KAFKA_AHEAD_SAFE", "NOTHING_COMMITTED"})
_EXAMPLES = 5


def verdict_ok(verdict: str) -> bool:
    return verdict in CONTINUE_VERDICTS


@dataclass
class OutputCheck:
    """Counts every output id by its input index and checks seq increases per key within each output
    partition (a key's records all come from one input partition and go to one output partition)."""

    records: int
    counts: bytearray = field(init=False, repr=False)
    last_seq: dict[tuple[int, str], int] = field(default_factory=dict, repr=False)
    key_partitions: dict[str, set[int]] = field(default_factory=dict, repr=False)
    order_violations: int = 0
    order_examples: list[str] = field(default_factory=list)
    unexpected: int = 0
    unexpected_examples: list[str] = field(default_factory=list)
    seen: int = 0

    def __post_init__(self) -> None:
        self.counts = bytearray(self.records)  # one byte per input record: a million records, a megabyte

    def add(self, partition: int, value: bytes) -> None:
        self.seen += 1
        try:
            event = json.loads(value)
            event_id, user = str(event["id"]), str(event["user"])
        except (ValueError, KeyError, TypeError):
            self._unexpected(repr(value[:80]))
            return
        parsed = parse_id(event_id)
        if parsed is None or not 0 <= parsed[0] < self.records or is_malformed(parsed[0]):
            self._unexpected(event_id)
            return
        index, seq = parsed
        if self.counts[index] < 255:
            self.counts[index] += 1
        self.key_partitions.setdefault(user, set()).add(partition)
        last = self.last_seq.get((partition, user))
        if last is not None and seq <= last:
            self.order_violations += 1
            if len(self.order_examples) < _EXAMPLES:
                self.order_examples.append(f"{user} on output partition {partition}: seq {seq} after {last}")
        self.last_seq[(partition, user)] = seq if last is None else max(seq, last)

    def _unexpected(self, what: str) -> None:
        self.unexpected += 1
        if len(self.unexpected_examples) < _EXAMPLES:
            self.unexpected_examples.append(what)

    def result(self) -> dict[str, Any]:
        duplicates = duplicated_ids = lost = 0
        lost_examples: list[int] = []
        for index, count in enumerate(self.counts):
            if count > 1:
                duplicates += count - 1
                duplicated_ids += 1
            elif count == 0 and not is_malformed(index):
                lost += 1
                if len(lost_examples) < _EXAMPLES:
                    lost_examples.append(index)
        split_keys = sorted(k for k, parts in self.key_partitions.items() if len(parts) > 1)
        return {"output_records": self.seen, "expected_records": self.records - malformed_count(self.records),
                "duplicates": duplicates, "duplicated_ids": duplicated_ids, "lost": lost,
                "lost_examples": [f"e{i}" for i in lost_examples], "unexpected": self.unexpected,
                "unexpected_examples": self.unexpected_examples, "order_violations": self.order_violations,
                "order_examples": self.order_examples, "keys": len(self.key_partitions),
                "keys_on_several_output_partitions": split_keys[:_EXAMPLES]}


def malformed_count(records: int) -> int:
    return sum(1 for i in range(records) if is_malformed(i))


def dlq_check(dead_letters: Iterable[bytes], malformed: Iterable[bytes]) -> dict[str, Any]:
    """Dead letters = the malformed inputs, each exactly once."""
    got, want = Counter(dead_letters), Counter(malformed)
    return {"dead_letters": sum(got.values()), "expected": sum(want.values()),
            "duplicates": sum(n - 1 for n in got.values() if n > 1), "missing": sum((want - got).values()),
            "unexpected": sum(n for value, n in got.items() if value not in want), "exact": got == want}


def exactly_once_holds(output: dict[str, Any], dlq: dict[str, Any]) -> bool:
    return (output["duplicates"] == 0 and output["lost"] == 0 and output["unexpected"] == 0
            and output["order_violations"] == 0 and dlq["exact"])


def parse_verdict(stdout: str) -> str:
    """The overall verdict ``eos verify`` printed (``Verification: IN_SYNC (query ..., last committed batch 7,
    ...)``); ``NOTHING_COMMITTED`` when no batch has committed yet (the job's first run died early)."""
    for line in stdout.splitlines():
        if line.startswith("Verification:"):
            if "last committed batch -," in line:
                return "NOTHING_COMMITTED"
            words = line.split()
            return words[1] if len(words) > 1 else "UNKNOWN"
    return "UNKNOWN"
