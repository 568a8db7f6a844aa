"""The spec's librdkafka settings as kafka-python 3.x ``KafkaAdminClient`` arguments (the transaction admin client).

Connection and security settings carry over (bootstrap servers, client id, security protocol,
SASL PLAIN/SCRAM/GSSAPI (GSSAPI when a SASL protocol names no mechanism, as in librdkafka),
SSL files and password, hostname verification, timeouts), through
:data:`~airflow_provider_eos.kafka.settings.keys.SETTINGS`. Producer and consumer settings mean
nothing to an admin client and are dropped, named at DEBUG; any other key kafka-python cannot
take is refused by name. Values are never logged, because some are secrets; kafka-python's own
loggers are filtered by :func:`protect_secrets`.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from airflow_provider_eos.core.errors import KafkaConfigError
from airflow_provider_eos.core.secrets import is_secret_setting
from airflow_provider_eos.kafka.settings.keys import Renamed
from airflow_provider_eos.kafka.settings.translation import require_bootstrap_servers, settings_to_translate
from airflow_provider_eos.kafka.settings.values import (
    KAFKA_PYTHON,
    as_bool,
    as_int,
    bootstrap_servers,
    refuse,
    sasl_mechanism,
    security_protocol,
)

__all__ = ["kafka_python_config", "protect_secrets"]

log = logging.getLogger(__name__)
#: librdkafka's ``sasl.mechanism`` when the spec sets none.
_DEFAULT_SASL_MECHANISM = "GSSAPI"
#: kafka-python has no setting for it: it decides the SSL context built below.
_VERIFY_KEY = ("enable.ssl.certificate.verification",)


def _renamed(key: str, rule: Renamed, value: Any) -> Any:
    if rule.kind == "int":
        return as_int(key, value) * rule.scale
    if rule.kind == "bool":
        return as_bool(key, value)
    return str(value)


def _ca_file(key: str, location: str, out: dict[str, Any]) -> None:
    if location.lower() == "probe":
        # librdkafka's probe searches the system's CA store; kafka-python without a CA file loads the
        # system's default verify paths (SSLContext.load_default_certs), the same store. Passed on, the
        # word would be opened as a file and every TLS connection of the admin client would fail.
        log.debug("kafka['ssl.ca.location'] 'probe': kafka-python uses the system's default CA store")
        return
    if Path(location).is_dir():
        # kafka-python opens ssl_cafile as one file (load_verify_locations(cafile)); a directory fails
        # only when the admin client first connects.
        raise refuse(
            key,
            KAFKA_PYTHON,
            f"{location!r} is a CA directory; kafka-python reads one PEM file",
            "concatenate the CA certificates into one PEM file and point ssl.ca.location at it",
        )
    out["ssl_cafile"] = location


def _special(key: str, value: Any, out: dict[str, Any]) -> None:
    if key in ("bootstrap.servers", "metadata.broker.list"):
        out["bootstrap_servers"] = bootstrap_servers(key, value)
    elif key == "security.protocol":
        out["security_protocol"] = security_protocol(key, value)
    elif key in ("sasl.mechanism", "sasl.mechanisms"):
        mechanism = sasl_mechanism(key, value)
        if mechanism == "OAUTHBEARER":
            raise refuse(
                key,
                KAFKA_PYTHON,
                f"{value!r} cannot be configured from the spec for the transaction admin client",
                "use one of GSSAPI, PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 for the pipeline's principal",
            )
        out["sasl_mechanism"] = mechanism
    elif key == "ssl.endpoint.identification.algorithm":
        algorithm = str(value).strip().lower()
        if algorithm not in ("https", "none", ""):
            raise refuse(key, None, f"is {value!r}", "use 'https' or 'none'")
        out["ssl_check_hostname"] = algorithm == "https"
    elif key == "ssl.ca.location":
        _ca_file(key, str(value).strip(), out)
    elif key in ("sasl.kerberos.keytab", "sasl.kerberos.principal"):
        raise refuse(
            key,
            KAFKA_PYTHON,
            "kafka-python logs in with the process's Kerberos ticket, not from a keytab",
            "run the recovery tasks where a ticket exists (kinit -kt <keytab> <principal>) and remove "
            "sasl.kerberos.keytab and sasl.kerberos.principal from the spec",
        )
    else:
        raise AssertionError(f"no kafka-python translation for special key {key!r}")  # the table and this disagree


def kafka_python_config(librdkafka: Mapping[str, Any]) -> dict[str, Any]:
    """Translate a librdkafka client config into ``KafkaAdminClient`` keyword arguments.

    :param librdkafka: the spec's ``kafka`` dict (or any librdkafka config).
    :returns: keyword arguments for ``kafka.admin.KafkaAdminClient``.
    :raises KafkaConfigError: naming the key, if a setting cannot be honoured (a mechanism
        kafka-python cannot take from a config, such as OAUTHBEARER, an inline PEM, a malformed
        value, a key the table does not know).
    """
    out: dict[str, Any] = {}
    verify_certificates = True
    purpose = "the transaction admin client"
    for key, value, rule in settings_to_translate(librdkafka, KAFKA_PYTHON, purpose,
                                                  lambda setting: setting.kafka_python, claimed=_VERIFY_KEY):
        if rule is None:
            verify_certificates = as_bool(key, value)
        elif isinstance(rule, Renamed):
            out[rule.name] = _renamed(key, rule, value)
        else:
            _special(key, value, out)
    require_bootstrap_servers("bootstrap_servers" in out)
    if out.get("security_protocol", "").startswith("SASL_"):
        # kafka-python has no default mechanism (it would ask the broker for None); librdkafka's, and the
        # Java client's, is GSSAPI, so the same spec means the same login for every client.
        out.setdefault("sasl_mechanism", _DEFAULT_SASL_MECHANISM)
    if not verify_certificates:
        # kafka-python has no switch for this; only a ready-made SSLContext expresses it.
        context = ssl.create_default_context(cafile=out.get("ssl_cafile"))
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        if out.get("ssl_certfile"):
            context.load_cert_chain(out["ssl_certfile"], out.get("ssl_keyfile"), out.get("ssl_password"))
        out["ssl_context"] = context
        out["ssl_check_hostname"] = False
    return out


def kafka_python_can_take(librdkafka: Mapping[str, Any]) -> bool:
    """Whether :func:`kafka_python_config` translates ``librdkafka`` (no OAUTHBEARER, keytab or CA directory...):
    a reader that librdkafka can serve as well keeps librdkafka for a config kafka-python refuses."""
    try:
        kafka_python_config(librdkafka)
    except KafkaConfigError:
        return False
    return True


class _RedactSecrets(logging.Filter):
    """Drops kafka-python log records that would show a secret.

    kafka-python logs its whole config at DEBUG when the admin client starts, and its
    protocol loggers dump request bodies (SASL authentication included) at DEBUG.
    """

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Starting KafkaAdminClient with configuration"):
            return False
        if not self.secrets:
            return True
        try:
            text = record.getMessage()
        except Exception:
            return False
        return not any(secret in text for secret in self.secrets)


_REDACT = _RedactSecrets()


def protect_secrets(settings: Mapping[str, Any]) -> None:
    """Keep the secret values of kafka-python arguments out of kafka-python's own log records.

    :param settings: ``KafkaAdminClient`` keyword arguments (:func:`kafka_python_config`).
    """
    # Logger filters do not apply to child loggers, so the filter goes on every kafka-python
    # logger that exists once the admin client's modules are imported.
    import kafka.admin  # noqa: F401  (creates the loggers of every module the admin client uses)

    _REDACT.secrets.update(
        value for key, value in settings.items() if is_secret_setting(key, value) and isinstance(value, str) and value
    )
    for name in [*logging.Logger.manager.loggerDict, "kafka"]:
        if name == "kafka" or name.startswith("kafka."):
            logger = logging.getLogger(name)
            if _REDACT not in logger.filters:
                logger.addFilter(_REDACT)
