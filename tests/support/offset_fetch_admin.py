"""kafka-python admin client stand-ins answering from a script: OffsetFetch, for the unit tests of the read of the
group's offsets (tests/unit/test_group_offset_fetch.py, test_group_description.py), and OffsetCommit, for the
repairs' write (tests/unit/test_group_offset_commit.py). The answers are kafka-python's own response objects;
the real broker: tests/integration/test_health_live.py, test_silent_broker.py and test_recovery_cli.py.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from typing import Any

from kafka.protocol.consumer.group import OffsetFetchResponse

BROKERS = "broker-1:9093,broker-2:9093"

Partition = OffsetFetchResponse.OffsetFetchResponseTopic.OffsetFetchResponsePartition


def answer(partitions: Iterable[tuple[str, int, int, str | None, int]], error_code: int = 0) -> Any:
    """An OffsetFetch v7 response: ``(topic, partition, committed offset, metadata, error code)`` per partition."""
    by_topic: dict[str, list[Any]] = {}
    for topic, index, offset, metadata, code in partitions:
        by_topic.setdefault(topic, []).append(Partition(partition_index=index, committed_offset=offset,
                                                        committed_leader_epoch=-1, metadata=metadata,
                                                        error_code=code))
    topics = [OffsetFetchResponse.OffsetFetchResponseTopic(name=name, partitions=parts)
              for name, parts in by_topic.items()]
    return OffsetFetchResponse(throttle_time_ms=0, topics=topics, error_code=error_code, version=7)


class _Manager:
    def __init__(self, script: list[Any]) -> None:
        self.script = script
        self.sent: list[tuple[Any, Any]] = []
        self.cluster = type("Cluster", (), {"_coordinators": {}})()

    def run(self, coroutine: Any, *args: Any) -> Any:
        return asyncio.run(coroutine(*args))

    async def send(self, request: Any, node_id: Any = None) -> Any:
        self.sent.append((request, node_id))
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, threading.Event):  # a broker that never answers: wait until the test lets go
            await asyncio.get_running_loop().run_in_executor(None, step.wait, 30)
            raise AssertionError("the deadline should have ended the call")
        if isinstance(step, BaseException):
            raise step
        return step


class OffsetFetchAdmin:
    """Answers each OffsetFetch with the next step of ``script`` (a response, or an exception raised; the last
    step repeats). Its coordinator lookups are counted in ``lookups``; its cache is kafka-python's own shape."""

    def __init__(self, *script: Any, request_timeout_ms: int = 1000, bootstrap_timeout_ms: int = 1000) -> None:
        self._manager = _Manager(list(script))
        self.config = {"bootstrap_servers": BROKERS, "request_timeout_ms": request_timeout_ms,
                       "bootstrap_timeout_ms": bootstrap_timeout_ms}
        self.lookups = 0

    async def _find_coordinator_id(self, group_id: str) -> int:
        from kafka.protocol.metadata import CoordinatorType

        cached = self._manager.cluster._coordinators.get((CoordinatorType.GROUP, group_id))
        if cached is not None:
            return cached
        self.lookups += 1
        self._manager.cluster._coordinators[(CoordinatorType.GROUP, group_id)] = 1
        return 1

    @property
    def sent(self) -> list[tuple[Any, Any]]:
        return self._manager.sent


class OffsetCommitAdmin:
    """Answers each ``alter_group_offsets`` (kafka-python's OffsetCommit for a group without members) with the next
    step of ``script``: ``{TopicPartition: error class}``, or an exception raised (the last step repeats). What it
    was asked to commit is in ``committed``; its coordinator cache is kafka-python's own shape, as above."""

    def __init__(self, *script: Any, request_timeout_ms: int = 1000, bootstrap_servers: str = BROKERS) -> None:
        self.script = list(script)
        self.config = {"bootstrap_servers": bootstrap_servers, "request_timeout_ms": request_timeout_ms,
                       "bootstrap_timeout_ms": 1000}
        self.committed: list[tuple[str, dict[Any, Any]]] = []
        self._manager = _Manager([])

    def alter_group_offsets(self, group_id: str, offsets: dict[Any, Any]) -> dict[Any, Any]:
        self.committed.append((group_id, dict(offsets)))
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, BaseException):
            raise step
        return step
