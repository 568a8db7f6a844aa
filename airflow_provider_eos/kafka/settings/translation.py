"""The walk both translations share: each librdkafka key looked up in the table, dropped or refused by its rule.

:mod:`.java` and :mod:`.kafka_python` differ in what a renamed or special key becomes, not in how an
unknown, dropped or refused key is met: that lives here once, so both clients refuse the same keys
with the same sentence.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Iterator, Mapping
from typing import Any

from airflow_provider_eos.core.errors import KafkaConfigError
from airflow_provider_eos.kafka.settings.keys import SETTINGS, Dropped, Refused, Renamed, Rule, Setting, Special
from airflow_provider_eos.kafka.settings.values import Dialect, refuse

__all__ = ["require_bootstrap_servers", "settings_to_translate"]

log = logging.getLogger(__name__)


def settings_to_translate(
    librdkafka: Mapping[str, Any],
    dialect: Dialect,
    purpose: str,
    rule_of: Callable[[Setting], Rule],
    *,
    role: str | None = None,
    claimed: Container[str] = (),
) -> Iterator[tuple[str, Any, Renamed | Special | None]]:
    """The keys the dialect must translate itself, with their rule; the others are dropped or refused here.

    :param dialect: the client the settings are for, as errors name it.
    :param purpose: what the client does, as the error for an unknown key names it.
    :param rule_of: the dialect's column of the table.
    :param role: a client role (``consumer``, ``producer``): keys of another role are dropped.
    :param claimed: keys the dialect takes whatever their rule (yielded with rule ``None``).
    :raises KafkaConfigError: for a key the table does not know, or one its rule refuses.
    """
    for key, value in librdkafka.items():
        setting = SETTINGS.get(key)
        if setting is None:
            raise refuse(
                key,
                dialect,
                f"is not a librdkafka setting this package translates for {purpose}",
                "remove it from the spec's kafka settings, or add its translation to "
                "airflow_provider_eos.kafka.settings.keys",
            )
        if role is not None and setting.scope not in ("common", role):
            log.debug("kafka[%r] is a %s setting; dropped for %s as %s", key, setting.scope, dialect, role)
            continue
        if key in claimed:
            yield key, value, None
            continue
        rule = rule_of(setting)
        if isinstance(rule, Dropped):
            log.debug("kafka[%r] dropped for %s: %s", key, dialect, rule.reason)
        elif isinstance(rule, Refused):
            raise refuse(key, dialect, rule.problem, rule.fix)
        else:
            yield key, value, rule


def require_bootstrap_servers(present: bool) -> None:
    """:raises KafkaConfigError: when the translated settings name no brokers."""
    if not present:
        raise KafkaConfigError(
            "kafka['bootstrap.servers'] is missing", fix="set it to the broker list, e.g. 'localhost:9092'"
        )
