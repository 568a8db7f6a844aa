"""Which settings hold secrets, by name and by value: the one owner of secret detection and redaction.

Names come in several dialects (librdkafka ``sasl.password``, the Java client's
``sasl.jaas.config``, kafka-python's ``ssl_password``, fsspec's ``account_key``, Spark options
with a ``kafka.`` prefix, Hadoop's ``fs.s3a.secret.key``, camelCase ``keyStorePassword``), so a
name is split into words and the words are judged, rather than matched as substrings: ``sas``
(an Azure SAS token) must not match ``sasl.username``, and ``key`` must not match
``ssl.key.location``. Hadoop puts an account or bucket after the telling words
(``fs.azure.account.key.<account>.dfs.core.windows.net``), so a few word sequences count
wherever they stand.

A value is judged too: a secret under an innocent name (a SAS-signed URL in
``spark.jars.repositories``, a token in a URL's user part, a JAAS line, a PEM private key) is
still a secret. :func:`redact_text` applies the same rules to free text such as error messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "SECRET_NAMES",
    "SECRET_WORDS",
    "SPARK_DEFAULT_REDACTION_REGEX",
    "SPARK_REDACTION_REGEX",
    "is_secret_key",
    "is_secret_setting",
    "is_secret_value",
    "redact_config",
    "redact_text",
]

REDACTED = "***"
"""What :func:`redact_config` and :func:`redact_text` show instead of a secret value."""

#: A name holding any of these words holds a secret. ``jaas``: the Java client's
#: ``sasl.jaas.config`` carries the SASL password inside its login module options; ``sig`` and
#: ``signature``: the signature of a pre-signed URL or SAS token (``sig=``, ``X-Amz-Signature=``).
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
        "sig",
        "signature",
    }
)

#: Whole names that hold secrets without a telling word: librdkafka's inline PEM private key
#: and OAUTHBEARER config (client secrets inside), the Java client's inline PEM key, an Azure
#: storage connection string (its account key inside), a Google service-account key file's contents.
SECRET_NAMES = frozenset(
    {"ssl.key.pem", "ssl_key", "sasl.oauthbearer.config", "ssl.keystore.key", "connection_string", "keyfile_dict"}
)

# Word sequences that make a name secret wherever they stand, whatever follows: Azure's account
# key (``fs.azure.account.key.<account>...``, adlfs ``account_key``) and a Google service
# account's JSON key file (``google.cloud.auth.service.account.json.keyfile``).
_SECRET_SEQUENCES = (("account", "key"), ("json", "keyfile"))

# A name ending in one of these words names where or what a secret is, not the secret itself
# (``sasl.oauthbearer.token.endpoint.url``, ``*.location``, ``fs.s3a.aws.credentials.provider``).
_NOT_A_VALUE = frozenset(
    {"url", "location", "path", "file", "type", "mechanism", "mechanisms", "algorithm", "provider", "class"}
)

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
# Dialect prefixes that do not change what a name means (Spark's ``kafka.`` option prefix).
_PREFIXES = ("kafka.",)

# A URL's user part: a token (``https://TOKEN@host``) or a user and password. Azure's ``abfss://``
# and ``wasbs://`` name the container there (``abfss://container@account...``): only a password
# makes theirs a secret.
_URL_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*)://([^/?#\s@]+)@")
_CONTAINER_SCHEMES = frozenset({"abfs", "abfss", "wasb", "wasbs"})
# ``name=value`` in query strings (``?sig=``, ``&X-Amz-Signature=``), connection strings
# (``;AccountKey=``), JAAS options (`` password="..."``) and JVM options (``-Dx.keyStorePassword=``).
_ASSIGNMENT = re.compile(r"(?:^|(?<=[?&;\s])|(?<=-D))([A-Za-z_][\w.-]*)=(\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^&;\s]+)")
# ``"name": "value"`` in JSON (a service account's key file pasted as a value).
_JSON_PAIR = re.compile(r"\"([\w.-]+)\"(\s*:\s*)\"((?:[^\"\\]|\\.)*)\"")
# A PEM private key, also with its line breaks escaped (``\\n`` inside JSON) or cut short.
_PEM_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[A-Za-z0-9+/=\s\\]*(?:-----END [A-Z0-9 ]*PRIVATE KEY-----)?"
)
_AUTHORIZATION = re.compile(r"\b(Bearer|Basic) [A-Za-z0-9._~+/=-]{12,}")


def _words(name: str) -> list[str]:
    return [word.lower() for word in _SEPARATORS.split(_CAMEL_BOUNDARY.sub("_", name)) if word]


def _has_sequence(words: list[str], sequence: tuple[str, ...]) -> bool:
    size = len(sequence)
    return any(tuple(words[i:i + size]) == sequence for i in range(len(words) - size + 1))


def is_secret_key(name: str) -> bool:
    """Whether a setting's value is a secret (password, private key, token, JAAS config ...), by its name.

    :param name: a setting name in any dialect: librdkafka, the Java client (also with Spark's
        ``kafka.`` prefix), kafka-python keyword, fsspec storage option, Spark or Hadoop setting,
        a URL query parameter.
    """
    lowered = name.strip().lower()
    for prefix in _PREFIXES:
        if lowered.startswith(prefix) and lowered[len(prefix):] in SECRET_NAMES:
            return True
    if lowered in SECRET_NAMES:
        return True
    words = _words(name)
    if any(_has_sequence(words, sequence) for sequence in _SECRET_SEQUENCES):
        return True
    if not words or words[-1] in _NOT_A_VALUE:
        return False
    # ``key`` alone or as the last word is a credential (s3fs ``key``, ``fs.s3a.access.key``,
    # ``api_key``); inside a name it is usually a path or a serializer (``ssl.key.location``).
    return words[-1] == "key" or any(word in SECRET_WORDS for word in words)


def _secret_userinfo(match: re.Match[str]) -> bool:
    return match.group(1).lower() not in _CONTAINER_SCHEMES or ":" in match.group(2)


def is_secret_value(value: object) -> bool:
    """Whether a value looks like a secret whatever its name: credentials in a URL, a signature, a key.

    :param value: a setting's value; only text is judged.
    """
    if not isinstance(value, str) or not value:
        return False
    return (
        any(_secret_userinfo(match) for match in _URL_USERINFO.finditer(value))
        or any(is_secret_key(match.group(1)) for match in _ASSIGNMENT.finditer(value))
        or any(is_secret_key(match.group(1)) for match in _JSON_PAIR.finditer(value))
        or _PEM_PRIVATE_KEY.search(value) is not None
        or _AUTHORIZATION.search(value) is not None
    )


def is_secret_setting(name: object, value: object = None) -> bool:
    """Whether a setting is a secret, by its name (:func:`is_secret_key`) or its value (:func:`is_secret_value`).

    :param name: the setting's name in any dialect.
    :param value: its value, when known.
    """
    return is_secret_key(str(name)) or is_secret_value(value)


def redact_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``config`` that is safe to log: every secret value (:func:`is_secret_setting`) is ``***``.

    :param config: settings in any dialect (librdkafka, Java client or Spark options, kafka-python).
    """
    return {key: REDACTED if is_secret_setting(key, value) else value for key, value in config.items()}


def _hide_assignment(match: re.Match[str]) -> str:
    return f"{match.group(1)}={REDACTED}" if is_secret_key(match.group(1)) else match.group(0)


def _hide_json_pair(match: re.Match[str]) -> str:
    return f'"{match.group(1)}"{match.group(2)}"{REDACTED}"' if is_secret_key(match.group(1)) else match.group(0)


def _hide_userinfo(match: re.Match[str]) -> str:
    return f"{match.group(1)}://{REDACTED}@" if _secret_userinfo(match) else match.group(0)


#: Spark's own default of ``spark.redaction.regex``: kept in :data:`SPARK_REDACTION_REGEX`, whose additions it lacks.
SPARK_DEFAULT_REDACTION_REGEX = "(?i)secret|password|token|access[.]?key"

# Where a word of :func:`_words` starts and ends, and what lies between two words, as regex
# lookarounds that Java's and Python's engines read alike: a run of letters and digits, split
# again where a lower-case letter or digit meets an upper-case one (``keyStorePassword``). The
# words themselves are matched case-insensitively, inside ``(?i:...)`` only: a global ``(?i)``
# would make ``[a-z]`` match upper case too and lose the camelCase boundaries.
_WORD_START = r"(?:(?<![A-Za-z0-9])|(?<=[a-z0-9])(?=[A-Z]))"
_WORD_END = r"(?:(?![A-Za-z0-9])|(?<=[a-z0-9])(?=[A-Z]))"
_WORD_GAP = r"(?:[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z]))"


def _any_word(words: Iterable[str]) -> str:
    """One of ``words``, in any case; longest first, so a word is never cut short by its own prefix."""
    return "(?i:" + "|".join(sorted((re.escape(word) for word in words), key=lambda w: (-len(w), w))) + ")"


def _spark_redaction_regex() -> str:
    """The regex behind :data:`SPARK_REDACTION_REGEX`, built from this module's rules."""
    not_last = rf"(?!.*?{_WORD_START}{_any_word(_NOT_A_VALUE)}[^A-Za-z0-9]*$)"
    names = [rf"(?<![A-Za-z0-9]){re.escape(name)}[^A-Za-z0-9]*$" for name in sorted(SECRET_NAMES)]
    sequences = [_WORD_START + _WORD_GAP.join(f"(?i:{word})" for word in sequence) + _WORD_END
                 for sequence in _SECRET_SEQUENCES]
    containers = "|".join(sorted(_CONTAINER_SCHEMES))
    alternatives = [
        "(?i:" + SPARK_DEFAULT_REDACTION_REGEX.removeprefix("(?i)") + ")",
        # A telling word, unless the name's last word says it names where or what the secret is.
        f"{_WORD_START}{_any_word(SECRET_WORDS)}{_WORD_END}{not_last}",
        # ``key`` as the last word (``fs.s3a.access.key``, ``api_key``).
        rf"{_WORD_START}(?i:key)[^A-Za-z0-9]*$",
        *sequences,
        *("(?i:" + name + ")" for name in names),
        # Values: credentials in a URL's user part (a container's name alone is none), an Authorization header.
        rf"\b(?!(?i:{containers})://[^/?#\s@:]+@)[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s@]+@",
        _AUTHORIZATION.pattern,
    ]
    return "|".join(alternatives)


SPARK_REDACTION_REGEX = _spark_redaction_regex()
"""A value for ``spark.redaction.regex`` that finds every secret this module finds, and what Spark's default does.

Spark hides a setting whose name *or* value the regex finds (``Utils.redact``: in the UI's
Environment tab, the event log, ``spark-submit --verbose``). Its default misses an Azure account
key (``fs.azure.account.key.<account>...``), a SAS token (``fs.azure.sas.<container>...``), a GCS
key file or private key (``...json.keyfile``, ``...private.key``), a password in a repository URL.
Matched against a whole name, the regex finds every name :func:`is_secret_key` calls secret; it is
the same rules, so names this module does not call secret stay visible (unless Spark's default
hides them). Applied to a value it also finds every secret word anywhere in it (``sig=`` in a SAS
URL, ``password=`` in a JAAS line, ``PRIVATE KEY`` in a PEM block), a URL's credentials and an
Authorization header: a superset of :func:`is_secret_value`. A Java regex, also valid for Python's
``re``.
"""


def redact_text(text: str) -> str:
    """``text`` with every secret-looking part (:func:`is_secret_value`'s rules) replaced by ``***``.

    For text that may quote a value, such as an error message naming a URL.

    :param text: free text.
    """
    text = _PEM_PRIVATE_KEY.sub(REDACTED, text)
    text = _URL_USERINFO.sub(_hide_userinfo, text)
    text = _JSON_PAIR.sub(_hide_json_pair, text)
    text = _ASSIGNMENT.sub(_hide_assignment, text)
    return _AUTHORIZATION.sub(lambda match: f"{match.group(1)} {REDACTED}", text)
