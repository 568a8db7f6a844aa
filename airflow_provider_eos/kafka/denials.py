"""A client's refusal (librdkafka, kafka-python, the Java client's text) as the typed missing-ACL error.

Each call site that sends a request says which request and which resources it named; this
module reads the three clients' ways of saying "not authorized" and hands them to the one
mapping, :func:`airflow_provider_eos.core.acls.denials.acl_missing`. Anything that is not an
authorization refusal gives ``None``: the caller keeps its own error for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.acls import ResourceType
from airflow_provider_eos.core.acls.denials import acl_missing, denied_resource_type, java_denial
from airflow_provider_eos.core.errors import AclMissingError, RetryExhaustedError

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

__all__ = ["error_code", "raise_if_refused", "raise_if_topics_refused", "refusal"]

Names = Mapping[ResourceType, Iterable[str]]


def error_code(error: object) -> str | None:
    """The error's code name: librdkafka's ``KafkaError.name()`` (also inside a ``KafkaException``), or
    kafka-python's exception class name; ``None`` for anything else."""
    if isinstance(error, RetryExhaustedError):
        return error_code(error.last_error)
    name = getattr(error, "name", None)
    if callable(name):  # confluent_kafka.KafkaError
        return str(name())
    args = getattr(error, "args", ())
    if args and callable(getattr(args[0], "name", None)):  # confluent_kafka.KafkaException(KafkaError)
        return str(args[0].name())
    if type(error).__module__.startswith("kafka.errors"):
        return type(error).__name__
    return None


def refusal(error: object, request: str, names: Names, *, settings: Mapping[str, Any] | None = None,
            principal: str | None = None) -> AclMissingError | None:
    """The missing-ACL error ``error`` stands for, or ``None`` if it is no authorization refusal.

    :param error: a client's error, exception, or a Java exception's text.
    :param request: the Kafka request that was refused (see :data:`~airflow_provider_eos.core.acls.denials.NEEDED`).
    :param names: the resources the request named, per resource type.
    :param settings: the client's librdkafka settings (names the principal).
    :param principal: the principal, when known without settings.
    """
    if isinstance(error, AclMissingError):
        return error
    if isinstance(error, str):
        found = java_denial(error)
        if found is None:
            return None
        resource_type, listed = found
        return acl_missing(request, resource_type, listed or tuple(names.get(resource_type, ())),
                           settings=settings, principal=principal, detail=_java_detail(error))
    code = error_code(error)
    resource_type = denied_resource_type(code) if code else None
    if resource_type is None:
        return None
    return acl_missing(request, resource_type, tuple(names.get(resource_type, ())), settings=settings,
                       principal=principal, detail=str(code))


def raise_if_refused(error: object, request: str, names: Names, *, settings: Mapping[str, Any] | None = None,
                     principal: str | None = None) -> None:
    """Raise :func:`refusal`'s error, chained to ``error``, if ``error`` is an authorization refusal."""
    refused = refusal(error, request, names, settings=settings, principal=principal)
    if refused is not None:
        raise refused from (error if isinstance(error, BaseException) else None)


def _java_detail(text: str) -> str:
    """The Java exception's own line (``...TopicAuthorizationException: Not authorized ...``), not Spark's wrapping."""
    found = re.search(r"[\w.]*AuthorizationException[^\n]*", text)
    return (found.group(0) if found else text.splitlines()[0]).strip()[:300]


def raise_if_topics_refused(admin: AdminClient, topics: Iterable[str], *, timeout_s: float, brokers: str,
                            settings: Mapping[str, Any] | None = None) -> None:
    """Raise the missing-ACL error for any of ``topics`` the principal may not describe.

    The cluster's metadata lists only the topics a principal may ``DESCRIBE``: one absent from it
    may not exist or may be refused. DescribeTopics on it tells which, without creating anything
    (a Metadata request naming the topic could auto-create it). A DescribeTopics no broker answered
    says neither: it raises :class:`~airflow_provider_eos.core.errors.KafkaNoAnswerError` (before, the
    client's own ``_TIMED_OUT`` passed as "may not exist", and the topic was reported missing).

    :param brokers: the ``bootstrap.servers`` the admin client is connected to (named by a no-answer).
    """
    from confluent_kafka import KafkaException, TopicCollection

    from airflow_provider_eos.kafka.retriable import raise_if_unanswered

    wanted = sorted(set(topics))
    if not wanted:
        return
    for topic, future in admin.describe_topics(TopicCollection(wanted), request_timeout=timeout_s).items():
        try:
            future.result(timeout_s)
        except (KafkaException, TimeoutError) as exc:
            raise_if_unanswered(exc, brokers=brokers, what=f"DescribeTopics({topic!r})", timeout_s=timeout_s)
            if isinstance(exc, KafkaException):
                raise_if_refused(exc, "Metadata", {ResourceType.TOPIC: [topic]}, settings=settings)
