"""Reading values out of the facts the way several rule families need them: durations, broker settings."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from airflow_provider_eos.core.preflight.facts import KAFKA_BROKER_DEFAULTS, PreflightFacts
from airflow_provider_eos.core.transactions import format_age

__all__ = ["RECOMMENDED_REPLICATION", "broker_setting", "format_ms", "recommended_replication"]

#: Replication Kafka recommends for durability; fewer live brokers make a lower factor the best
#: possible, so rules compare against ``min(RECOMMENDED_REPLICATION, live brokers)``.
RECOMMENDED_REPLICATION = 3


def recommended_replication(facts: PreflightFacts) -> int | None:
    """The replication to expect: :data:`RECOMMENDED_REPLICATION`, or the live brokers when fewer."""
    if facts.live_brokers is None:
        return None
    return min(RECOMMENDED_REPLICATION, max(facts.live_brokers, 1))


def format_ms(value: int) -> str:
    """A duration as the config spells it, with a readable form: ``60000 ms (1m00s)``."""
    text = format_age(value) or ""
    return f"{value} ms" if value < 1_000 else f"{value} ms ({text})"


def broker_setting(facts: PreflightFacts, key: str, pick: Callable[[Iterable[int]], int]) -> tuple[int, str] | None:
    """The strictest value of ``key`` over the brokers (``pick`` is ``min`` or ``max``), and who has it.

    The strictest, because any broker may coordinate the pipeline's transactional id or group.
    A broker that does not report the key is taken to run Kafka's default.

    :return: the value and a description of the brokers holding it, or ``None`` when the
        brokers' configs were not read.
    """
    if not facts.broker_configs:
        return None
    values: dict[int, int] = {}
    defaulted: set[int] = set()
    for broker, configs in facts.broker_configs.items():
        raw = configs.get(key)
        if raw is None or not str(raw).strip().lstrip("-").isdigit():
            values[broker] = KAFKA_BROKER_DEFAULTS[key]
            defaulted.add(broker)
        else:
            values[broker] = int(str(raw).strip())
    value = pick(values.values())
    holders = sorted(b for b, v in values.items() if v == value)
    who = f"broker {holders[0]}" if len(holders) == 1 else f"brokers {', '.join(map(str, holders))}"
    if len(values) > 1 and len(set(values.values())) > 1:
        who += f" ({'lowest' if pick is min else 'highest'} of {len(values)} brokers)"
    if set(holders) <= defaulted:
        who += ", Kafka's default: not reported"
    return value, who
