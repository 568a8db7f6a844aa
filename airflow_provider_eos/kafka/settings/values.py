"""Reading librdkafka setting values (strings, integers or booleans in the spec) and refusing them by name."""

from __future__ import annotations

from typing import Any, Literal

from airflow_provider_eos.core.errors import KafkaConfigError
from airflow_provider_eos.core.flags import parse_flag

__all__ = [
    "JAVA",
    "KAFKA_PYTHON",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "Dialect",
    "as_bool",
    "as_int",
    "as_text",
    "bootstrap_servers",
    "refuse",
    "sasl_mechanism",
    "security_protocol",
]

Dialect = Literal["the Java client under Spark", "kafka-python (the transaction admin client)"]
JAVA: Dialect = "the Java client under Spark"
KAFKA_PYTHON: Dialect = "kafka-python (the transaction admin client)"

SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
SASL_MECHANISMS = frozenset({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER"})


def refuse(key: str, dialect: Dialect | None, problem: str, fix: str) -> KafkaConfigError:
    """The error for a setting that cannot be used: names the key, the client and the fix (never the value).

    :param key: the librdkafka key of the spec's ``kafka`` dict.
    :param dialect: the client it cannot be expressed for; ``None`` when the value is bad for every client.
    :param problem: what is wrong, without secret values.
    :param fix: what to change.
    """
    where = f" for {dialect}" if dialect else ""
    return KafkaConfigError(f"kafka[{key!r}]{where}: {problem}", fix=fix)


def as_text(value: object) -> str:
    """A value as the string a Java client or Spark option takes (booleans as ``true``/``false``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def as_bool(key: str, value: object) -> bool:
    """A librdkafka boolean (``true``/``false``, ``1``/``0`` ...).

    :raises KafkaConfigError: naming the key, if the value is not a boolean.
    """
    flag = parse_flag(value)
    if flag is not None:
        return flag
    raise KafkaConfigError(f"kafka[{key!r}] is {value!r}, not a boolean", fix=f"set kafka[{key!r}] to true or false")


def as_int(key: str, value: object) -> int:
    """A librdkafka integer, also from a string.

    :raises KafkaConfigError: naming the key, if the value is not an integer.
    """
    if isinstance(value, bool):
        raise KafkaConfigError(f"kafka[{key!r}] is {value!r}, not an integer", fix=f"set kafka[{key!r}] to a number")
    try:
        return int(str(value).strip())
    except ValueError:
        raise KafkaConfigError(
            f"kafka[{key!r}] is {value!r}, not an integer", fix=f"set kafka[{key!r}] to a number"
        ) from None


def bootstrap_servers(key: str, value: Any) -> list[str]:
    """The broker list, ``host:port`` entries without blanks.

    :raises KafkaConfigError: if the list is empty.
    """
    servers = [server.strip() for server in str(value).split(",") if server.strip()]
    if not servers:
        raise KafkaConfigError(f"kafka[{key!r}] is empty", fix="set it to the broker list, e.g. 'localhost:9092'")
    return servers


def security_protocol(key: str, value: Any) -> str:
    """``security.protocol`` in upper case, one of Kafka's four.

    :raises KafkaConfigError: for any other protocol.
    """
    protocol = str(value).strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise KafkaConfigError(
            f"kafka[{key!r}] is {value!r}", fix=f"use one of {', '.join(sorted(SECURITY_PROTOCOLS))}"
        )
    return protocol


def sasl_mechanism(key: str, value: Any) -> str:
    """``sasl.mechanism(s)`` in upper case; librdkafka takes exactly one for a client.

    :raises KafkaConfigError: for a mechanism Kafka does not define.
    """
    mechanism = str(value).strip().upper()
    if mechanism not in SASL_MECHANISMS:
        raise KafkaConfigError(
            f"kafka[{key!r}] is {value!r}", fix=f"use one of {', '.join(sorted(SASL_MECHANISMS))}"
        )
    return mechanism
