"""Which setting names hold secrets: the one list for Kafka configs, storage options and client arguments.

Names come in several dialects (librdkafka ``sasl.password``, the Java client's
``sasl.jaas.config``, kafka-python's ``ssl_password``, fsspec's ``account_key``, Spark options
with a ``kafka.`` prefix, camelCase ``clientSecret``), so a name is split into words and the
words are judged, rather than matched as substrings: ``sas`` (an Azure SAS token) must not
match ``sasl.username``, and ``key`` must not match ``ssl.key.location``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "SECRET_NAMES", "SECRET_WORDS", "is_secret_key", "redact_config"]

REDACTED = "***"
"""What :func:`redact_config` shows instead of a secret value."""

#: A name holding any of these words holds a secret. ``jaas``: the Java client's
#: ``sasl.jaas.config`` carries the SASL password inside its login module options.
SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "secret",
        "token",
        "credential",
        "credentials",
        "private",
        "jaas",
        "sas",
        "authorization",
    }
)

#: Whole names that hold secrets without a telling word: librdkafka's inline PEM private key
#: and OAUTHBEARER config (client secrets inside), the Java client's inline PEM key, an Azure
#: storage connection string (its account key inside), a Google service-account key file's contents.
SECRET_NAMES = frozenset(
    {"ssl.key.pem", "ssl_key", "sasl.oauthbearer.config", "ssl.keystore.key", "connection_string", "keyfile_dict"}
)

# A name ending in one of these words names where or what a secret is, not the secret itself
# (``sasl.oauthbearer.token.endpoint.url``, ``sasl.kerberos.keytab``'s siblings, ``*.location``).
_NOT_A_VALUE = frozenset({"url", "location", "path", "file", "type", "mechanism", "mechanisms", "algorithm"})

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
# Dialect prefixes that do not change what a name means (Spark's ``kafka.`` option prefix).
_PREFIXES = ("kafka.",)


def _words(name: str) -> list[str]:
    return [word.lower() for word in _SEPARATORS.split(_CAMEL_BOUNDARY.sub("_", name)) if word]


def is_secret_key(name: str) -> bool:
    """Whether a setting's value is a secret (password, private key, token, JAAS config ...).

    :param name: a setting name in any dialect: librdkafka, the Java client (also with Spark's
        ``kafka.`` prefix), kafka-python keyword, fsspec storage option.
    """
    lowered = name.strip().lower()
    for prefix in _PREFIXES:
        if lowered.startswith(prefix) and lowered[len(prefix):] in SECRET_NAMES:
            return True
    if lowered in SECRET_NAMES:
        return True
    words = _words(name)
    if not words or words[-1] in _NOT_A_VALUE:
        return False
    # ``key`` alone or as the last word is a credential (s3fs ``key``, adlfs ``account_key``,
    # ``api_key``); inside a name it is usually a path or a serializer (``ssl.key.location``).
    return words[-1] == "key" or any(word in SECRET_WORDS for word in words)


def redact_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``config`` that is safe to log: every secret value (:func:`is_secret_key`) is ``***``.

    :param config: settings in any dialect (librdkafka, Java client or Spark options, kafka-python).
    """
    return {key: REDACTED if is_secret_key(str(key)) else value for key, value in config.items()}
