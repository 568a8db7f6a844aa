"""Apache Kafka's own defaults that this package relies on when it cannot read, or is not told, the real value.

One owner per value: the devstack starts its brokers with it, pre-flight takes it for a broker
that does not report the setting, health and abort judge transactions against it, and the spec's
errors name it.
"""

from __future__ import annotations

__all__ = ["KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS"]

#: Kafka's default ``transaction.max.timeout.ms`` (15 minutes): no producer's transaction may last longer
#: unless the brokers' operators raised it, and a producer asking for a longer ``transaction.timeout.ms``
#: is refused by the broker (INVALID_TRANSACTION_TIMEOUT).
KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 900_000
