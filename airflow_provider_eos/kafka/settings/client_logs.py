"""librdkafka's own log lines into Python logging, under a logger named for the client's role.

Without a ``logger`` in its config, every confluent-kafka client prints librdkafka's lines
(``%3|1700000000.123|FAIL|rdkafka#producer-1| ...``) straight to the process's stderr, where
nothing can filter them: an unreachable broker printed dozens before the package's clear error.
With a logger, confluent-kafka hands each line to ``logger.log`` (served by the client's
``poll``/``flush`` and the calls that wait on it), so it lands in the task log or the CLI's
handlers with the role in the logger name, e.g. ``airflow_provider_eos.kafka.librdkafka.producer``.

Connection failures (``FAIL``, ``ERROR``) and producer-id retries (``GETPID``) are retried by
librdkafka itself, and the call that needs the connection raises this package's typed error
naming the broker; so they are logged at INFO (task logs keep them, a terminal at the default
WARNING level does not fill up with them). Every other line keeps librdkafka's level.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["LOGGER_PREFIX", "RETRIED_FACILITIES", "ClientRole", "client_logger", "with_client_logger"]

#: The role of a confluent-kafka client; the last part of its logger's name.
ClientRole = Literal[
    "producer",
    "sink-producer",
    "fence-producer",
    "probe-producer",
    "consumer",
    "group-metadata-consumer",
    "admin",
    "probe-admin",
]

LOGGER_PREFIX = "airflow_provider_eos.kafka.librdkafka"
"""Parent logger of every librdkafka client logger; set its level to see or hide all of them."""

#: librdkafka facilities whose warnings and errors the client retries by itself (see module docstring).
RETRIED_FACILITIES = frozenset({"FAIL", "ERROR", "GETPID"})


class _RetriedToInfo(logging.Filter):
    """Logs librdkafka's retried connection failures at INFO instead of WARNING/ERROR.

    confluent-kafka calls ``logger.log(level, "%s [%s] %s", facility, client_name, message)``.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.levelno > logging.INFO and isinstance(args, tuple) and args and str(args[0]) in RETRIED_FACILITIES:
            record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
            # The logger's level was checked for the original level; handlers check only
            # their own level, so a logger set to WARNING would still print the line.
            return logging.getLogger(record.name).isEnabledFor(logging.INFO)
        return True


_RETRIED_TO_INFO = _RetriedToInfo()


def client_logger(role: str) -> logging.Logger:
    """The logger librdkafka lines of a client in ``role`` go to (``airflow_provider_eos.kafka.librdkafka.<role>``)."""
    logger = logging.getLogger(f"{LOGGER_PREFIX}.{role}")
    if _RETRIED_TO_INFO not in logger.filters:
        logger.addFilter(_RETRIED_TO_INFO)
    return logger


def with_client_logger(role: ClientRole | str, config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` plus the ``logger`` of ``role``: build every confluent-kafka client from this.

    Only at the line that constructs the client: a logger is no JSON value, and configs also go
    into XCom and files.

    :param role: the client's role in the package, e.g. ``sink-producer`` or ``admin``.
    :param config: a librdkafka config (see :mod:`airflow_provider_eos.kafka.settings.librdkafka`).
    """
    return {**config, "logger": client_logger(role)}
