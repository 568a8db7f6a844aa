"""A confluent-kafka admin client stand-in whose requests fail as a silent broker's do, for the unit tests of the
no-answer classification (tests/unit/test_group_offsets_no_answer.py, tests/unit/test_offset_readers_no_answer.py).

A broker that accepts connections and never answers fails librdkafka's requests with its own verdicts
(``_TIMED_OUT``, ``_TRANSPORT``...), or the caller's wait on the request's future runs out first
(``concurrent.futures``' own ``TimeoutError``). The real paused broker: tests/integration/test_silent_broker.py.
"""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from airflow_provider_eos.core.spec import PipelineSpec

BROKERS = "broker-1:9093,broker-2:9093"
TIMED_OUT = KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get metadata: Local: Timed out"))
TRANSPORT = KafkaException(KafkaError(KafkaError._TRANSPORT, "broker-1:9093/1: Connection reset by peer"))


def silent_spec(folder: Path) -> PipelineSpec:
    """The pipeline ``orders`` on :data:`BROKERS`, its checkpoint in ``folder``."""
    return PipelineSpec.from_dict({
        "name": "orders", "kafka": {"bootstrap.servers": BROKERS}, "input_topics": ["orders"],
        "output_topic": "orders-out", "group_id": "orders-eos", "transactional_id_prefix": "orders-eos",
        "checkpoint_location": str(folder / "checkpoint"),
    })


class Answer:
    """A request's future: fails with ``error``, or its wait runs out (``TimeoutError``) as the caller's would."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error

    def result(self, timeout: float) -> Any:
        if isinstance(self.error, TimeoutError):
            waited: Future[Any] = Future()
            return waited.result(0)  # a wait that runs out: concurrent.futures' own TimeoutError
        assert self.error is not None, "every case here fails the request"
        raise self.error


class SilentAdmin:
    """Metadata (``list_topics``: topics ``orders`` and ``orders-out``, one partition each) answered unless
    ``metadata`` fails it; OffsetFetch, OffsetCommit, ListOffsets and DescribeTopics failing with ``offsets``,
    ``commit``, ``list_offsets`` and ``describe``."""

    def __init__(self, *, metadata: BaseException | None = None, offsets: BaseException | None = None,
                 commit: BaseException | None = None, list_offsets: BaseException | None = None,
                 describe: BaseException | None = None) -> None:
        self.metadata, self.offsets, self.commit, self.failed_list_offsets = metadata, offsets, commit, list_offsets
        self.describe = describe

    def list_topics(self, timeout: float) -> Any:
        if self.metadata is not None:
            raise self.metadata
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions={0: None})
                                       for topic in ("orders", "orders-out")})

    def list_consumer_group_offsets(self, requests: list[Any], require_stable: bool) -> dict[str, Any]:
        return {request.group_id: Answer(self.offsets) for request in requests}

    def alter_consumer_group_offsets(self, requests: list[Any]) -> dict[str, Any]:
        return {request.group_id: Answer(self.commit) for request in requests}

    def __exit__(self, *_: object) -> None:
        """Destroyed by its owner (kafka/login.destroy_admin): nothing to free here."""

    def describe_topics(self, topics: Any, request_timeout: float) -> dict[str, Any]:
        return {topic: Answer(self.describe) for topic in topics.topic_names}

    def list_offsets(self, request: dict[Any, Any], **_: Any) -> dict[Any, Any]:
        return {tp: Answer(self.failed_list_offsets) for tp in request}
