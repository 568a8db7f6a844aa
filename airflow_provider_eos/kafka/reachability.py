"""Whether any broker answers, asked once and answered within seconds: the probe every use case runs first.

Without it, each client finds a cluster that is down in its own way and at its own pace:
librdkafka after a request's full timeout (30 s) with ``_TRANSPORT``, kafka-python after its
bootstrap timeout with "NoBrokersAvailable", pre-flight and health with their own words. The
probe sends one DescribeCluster and waits at most ``timeout_s`` for any answer. Anything a broker
says, even a refusal of the request, proves that one answers; the SASL login or TLS handshake
refusals the client reports meanwhile are :class:`~airflow_provider_eos.core.errors.KafkaLoginError`
(as :mod:`.login`); no answer at all is :class:`~airflow_provider_eos.core.errors.KafkaUnreachableError`,
one sentence naming the brokers and the client's last word on its connections.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.errors import KafkaUnreachableError
from airflow_provider_eos.kafka.login import described_admin

if TYPE_CHECKING:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient

__all__ = ["DEFAULT_CONNECT_TIMEOUT_S", "reachable_admin"]

#: How long to wait for any broker to answer: a few seconds, as a person at a terminal waits.
DEFAULT_CONNECT_TIMEOUT_S = 5.0


def _no_answer_codes() -> frozenset[int]:
    from confluent_kafka import KafkaError

    from airflow_provider_eos.kafka.retriable import NO_ANSWER_CODES

    # The client's own verdicts about its connections; any other error came from a broker. Before a first
    # answer, a name that does not resolve or a client torn down also mean that none came.
    return NO_ANSWER_CODES | {KafkaError._RESOLVE, KafkaError._DESTROY}


def _error_of(exc: BaseException | None) -> KafkaError | None:
    from airflow_provider_eos.kafka.retriable import kafka_error

    return None if exc is None else kafka_error(exc)


def reachable_admin(
    role: str, settings: Mapping[str, Any], *, timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
) -> AdminClient:
    """A confluent-kafka admin client on ``settings`` once a broker answered and accepted the login.

    :param role: the client's role, for its logger (see :func:`with_client_logger`).
    :param settings: librdkafka settings.
    :param timeout_s: how long to wait for any answer.
    :raises KafkaUnreachableError: when no broker answered within ``timeout_s``.
    :raises KafkaLoginError: when the cluster refused the SASL login or the TLS handshake.
    """
    from confluent_kafka import KafkaError

    last_said: list[str] = []

    def on_other_error(error: KafkaError) -> None:
        if error.code() != KafkaError._ALL_BROKERS_DOWN:  # says less than the transport error before it
            last_said[:] = [error.str()]

    admin, answered = described_admin(role, settings, timeout_s=timeout_s, on_other_error=on_other_error)
    if answered.done():
        error = _error_of(answered.exception())
        if error is None or error.code() not in _no_answer_codes():
            return admin
        if not last_said and error.code() != KafkaError._TIMED_OUT:
            last_said.append(error.str())
    raise KafkaUnreachableError(str(settings.get("bootstrap.servers")), timeout_s,
                                last_error=last_said[0] if last_said else None)
