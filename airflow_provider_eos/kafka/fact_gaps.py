"""Why a pre-flight fact stays unknown: the reasons the gathering records instead of failing.

Only an unreachable cluster stops pre-flight; any other read that fails leaves its fact ``None``
and its reason here, so the rules needing it report "not checked" and the rest still run.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaError, KafkaException

from airflow_provider_eos.core.errors import EosError

__all__ = ["FactGaps", "reason"]

log = logging.getLogger(__name__)


def reason(exc: BaseException) -> str:
    """What went wrong, as a fact's reason says it: an EosError's message, Kafka's error name and text."""
    if isinstance(exc, EosError):
        return exc.message
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return f"{exc.args[0].name()}: {exc.args[0].str()}"
    return f"{type(exc).__name__}: {exc}"


class FactGaps:
    """The facts one pre-flight could not read, each with its reason (``PreflightFacts.unavailable``)."""

    def __init__(self) -> None:
        self.unavailable: dict[str, str] = {}

    def missing(self, fact: str, exc: BaseException) -> None:
        """Record why ``fact`` stays unknown."""
        self.unavailable[fact] = reason(exc)
        log.warning("pre-flight: could not read %s: %s", fact, self.unavailable[fact])
