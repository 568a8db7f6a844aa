"""How the transactional-id probes read kafka-python's answers: a refusal, an answer past the ACL check, no answer.

kafka-python raises its own ``KafkaError`` (no confluent-kafka ``KafkaException``) both for a broker's
error code and for a request that got no answer; its request timeout is a ``RequestTimedOutError``,
which is also a broker code. Only a definite answer after the ACL check tells the ACL is there; no
answer leaves it unverified (``None``) and never escapes the probe. The real broker's case (a
paused broker) is tests/integration/test_acl_probe_no_answer.py.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kafka import errors

from airflow_provider_eos.kafka.acl_probes import _describe_transaction_probe, _end_txn_probe


class _Admin:
    """A kafka-python admin client whose DescribeTransactions raises ``error`` and whose EndTxn raises it too."""

    #: What the probes' deadline reads (kafka-python's own settings' names).
    config = {"bootstrap_timeout_ms": 1_000, "request_timeout_ms": 1_000, "bootstrap_servers": "127.0.0.1:9"}

    def __init__(self, error: Exception | None = None, end_txn_code: int = 51, *, hang: bool = False) -> None:
        self.error, self._manager = error, self
        self.end_txn_code, self.hang = end_txn_code, hang
        self.released = threading.Event()

    def _wait(self) -> None:
        if self.hang:  # a connected broker that never answers: kafka-python waits on its event loop
            self.released.wait(30)

    def describe_transactions(self, _ids: list[str]) -> Any:
        self._wait()
        if self.error is not None:
            raise self.error
        return {}

    def run(self, _send: Any) -> Any:
        self._wait()
        if self.error is not None:
            raise self.error
        return type("Response", (), {"error_code": self.end_txn_code})()


@pytest.mark.parametrize(
    ("error", "allowed", "words"),
    [
        (errors.TransactionalIdAuthorizationFailedError(), False, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        (errors.TransactionalIdNotFoundError(), True, "TRANSACTIONAL_ID_NOT_FOUND, past the ACL check"),
        (errors.RequestTimedOutError("Request timed out after 4000 ms"), None, "no answer, RequestTimedOutError"),
        (errors.KafkaTimeoutError("Timed out after 4000 ms"), None, "no answer, KafkaTimeoutError"),
        (errors.KafkaConnectionError("Connection lost"), None, "no answer, KafkaConnectionError"),
        (errors.NodeNotReadyError(1), None, "no answer, NodeNotReadyError"),
        (None, True, "answered"),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else repr(value),
)
def test_describe_probe_grants_only_on_an_answer_past_the_acl_check(
    error: Exception | None, allowed: bool | None, words: str
) -> None:
    result, evidence = _describe_transaction_probe(_Admin(error), "orders-eos-eos-acl-probe")
    assert result is allowed and words in evidence, evidence
    assert evidence.startswith("DescribeTransactions('orders-eos-eos-acl-probe')"), evidence


@pytest.mark.parametrize(
    "error",
    [errors.RequestTimedOutError("Request timed out after 4000 ms"), errors.KafkaConnectionError("Connection lost"),
     errors.KafkaTimeoutError()],
    ids=lambda e: type(e).__name__,
)
def test_end_txn_probe_without_an_answer_is_unverified(error: Exception) -> None:
    allowed, evidence = _end_txn_probe(_Admin(error), "orders-eos-eos-acl-probe")
    assert allowed is None, evidence
    assert evidence.startswith("EndTxn('orders-eos-eos-acl-probe', producer id -1): no answer, ")
    assert type(error).__name__ in evidence, evidence


def test_end_txn_probe_reads_the_brokers_code() -> None:
    assert _end_txn_probe(_Admin(end_txn_code=53), "x")[0] is False
    allowed, evidence = _end_txn_probe(_Admin(end_txn_code=51), "x")
    assert allowed is True and "error 51, past the ACL check" in evidence


@pytest.mark.parametrize("probe", [_describe_transaction_probe, _end_txn_probe], ids=["DescribeTransactions", "EndTxn"])
def test_a_probe_that_never_gets_an_answer_is_unverified_at_its_deadline(probe: Any) -> None:
    admin = _Admin(hang=True)
    started = time.monotonic()
    try:
        allowed, evidence = probe(admin, "orders-eos-eos-acl-probe")
    finally:
        admin.released.set()
    seconds = time.monotonic() - started
    assert allowed is None, evidence
    assert 1.9 < seconds < 5, f"{seconds:.1f} s: the deadline is the bootstrap wait and the request timeout (2 s)"
    assert "no answer" in evidence and "at 127.0.0.1:9 within 2 s" in evidence, evidence
