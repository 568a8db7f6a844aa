"""Refuse fast, and clearly, when the cluster refuses the client's login (SASL or the TLS handshake).

librdkafka retries a failed SASL authentication or TLS handshake as if the broker were down: a
request then times out after its full timeout with a bare transport error, and kafka-python only
says it could not bootstrap. The failure itself arrives at once, through the client's error
callback (``_AUTHENTICATION``, ``_SSL``). :func:`connected_admin` builds the admin client with that
callback and waits for the first answer: the cluster's description, or the refusal, which it
raises as :class:`~airflow_provider_eos.core.errors.KafkaLoginError` naming the user, the
mechanism and the brokers (never the password). Clusters without SASL or TLS have no login to
refuse: the admin client is returned as is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.errors import KafkaLoginError
from airflow_provider_eos.kafka.settings import with_client_logger

if TYPE_CHECKING:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient

__all__ = ["LOGIN_TIMEOUT_S", "check_login", "connected_admin", "described_admin", "destroy_admin", "has_login",
           "login_refused"]

#: How long to wait for the first answer before leaving the outcome to the caller's own requests.
LOGIN_TIMEOUT_S = 15.0


def has_login(settings: Mapping[str, Any]) -> bool:
    """Whether connecting with ``settings`` involves a login the cluster may refuse (SASL or TLS)."""
    protocol = str(settings.get("security.protocol", "plaintext")).lower()
    return protocol.startswith("sasl") or protocol == "ssl"


def login_refused(error: KafkaError, settings: Mapping[str, Any]) -> KafkaLoginError:
    """The :class:`KafkaLoginError` of a refusal the client's error callback received."""
    from confluent_kafka import KafkaError

    servers = settings.get("bootstrap.servers")
    if error.code() == KafkaError._SSL:
        return KafkaLoginError(
            f"the TLS handshake with {servers!r} failed: {error.str()}",
            fix="check ssl.ca.location (the CA that signed the brokers' certificates) and that the brokers' "
            "certificates name the host in bootstrap.servers",
        )
    user, mechanism = settings.get("sasl.username"), settings.get("sasl.mechanism", "GSSAPI")
    return KafkaLoginError(
        f"{servers!r} refused the SASL login of user {user!r} ({mechanism}): {error.str()}",
        fix="check sasl.username, sasl.password and sasl.mechanism in the spec's kafka settings or the Airflow "
        "kafka connection's extras; a SCRAM user must exist for that mechanism on the cluster",
    )


def connected_admin(role: str, settings: Mapping[str, Any], *, timeout_s: float = LOGIN_TIMEOUT_S) -> AdminClient:
    """An admin client on ``settings`` whose login the cluster accepted (or that needs none).

    :param role: the client's role, for its logger (see :func:`with_client_logger`).
    :param settings: librdkafka settings.
    :param timeout_s: how long to wait for the login's outcome; without one by then the client is
        returned and the caller's requests fail as they would have.
    :raises KafkaLoginError: when the cluster refuses the SASL login or the TLS handshake.
    """
    from confluent_kafka.admin import AdminClient

    if not has_login(settings):
        return AdminClient(with_client_logger(role, settings))
    return described_admin(role, settings, timeout_s=timeout_s)[0]


def described_admin(
    role: str, settings: Mapping[str, Any], *, timeout_s: float,
    on_other_error: Callable[[KafkaError], None] | None = None,
) -> tuple[AdminClient, Future]:
    """An admin client and its DescribeCluster, once it answered, the login was refused, or ``timeout_s`` passed.

    :param on_other_error: told every error the client reports that is not a login refusal.
    :raises KafkaLoginError: when the cluster refused the SASL login or the TLS handshake.
    """
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient

    refusals: list[KafkaError] = []

    def on_error(error: KafkaError) -> None:
        if error.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL):
            refusals.append(error)
        elif on_other_error is not None:
            on_other_error(error)

    admin = AdminClient({**with_client_logger(role, settings), "error_cb": on_error})
    answered = admin.describe_cluster(request_timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    # The error callback is served by poll(); the description's future completes on its own.
    while not answered.done() and not refusals and time.monotonic() < deadline:
        admin.poll(0.1)
    if refusals:
        raise login_refused(refusals[0], settings)
    return admin, answered


def check_login(settings: Mapping[str, Any], *, timeout_s: float = LOGIN_TIMEOUT_S) -> None:
    """Raise :class:`KafkaLoginError` if the cluster refuses ``settings``' login (before another client's calls)."""
    connected_admin("probe-admin", settings, timeout_s=timeout_s)


def destroy_admin(admin: AdminClient) -> None:
    """Destroy ``admin`` now, in this thread, once its owner is done with it.

    Left to the garbage collector, an admin client in a reference cycle (an exception's traceback holding
    the frame that made it) may be collected on one of librdkafka's own threads: a request whose caller
    gave up (its deadline passed) completes there later and runs Python, which can start a collection.
    librdkafka aborts the whole process when a client is destroyed from its own thread (a triggerer, a
    test worker: confluent-kafka-python PR 2131). After this the client's requests fail; its pending
    futures are never completed.
    """
    admin.__exit__(None, None, None)
