"""librdkafka's SASL and SSL settings in the Java client's terms (Kafka clients 3.9, as Spark 4.x ships them).

- SASL PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512: ``sasl.mechanism`` plus a ``sasl.jaas.config``
  with the login module and the quoted user name and password. GSSAPI with a keytab: the JDK's
  Krb5LoginModule; without a keytab no JAAS config is set, so the JVM's JAAS file or Spark's
  delegation tokens stay in charge, as librdkafka's kinit would use the ticket cache. Either way
  ``sasl.kerberos.service.name`` is set: librdkafka and kafka-python default it to ``kafka``, the
  Java client has no default.
- CA: ``ssl.ca.location`` (a PEM file) becomes a PEM truststore by location (KIP-651, Kafka
  2.7+); ``ssl.ca.pem`` becomes inline ``ssl.truststore.certificates``.
- Client certificate and key: a PEM keystore. Kafka's file-based PEM keystore
  (``ssl.keystore.location``) reads the key and the certificate chain from one file, so it is
  used when ``ssl.certificate.location`` and ``ssl.key.location`` name the same file (Kafka 3.9
  takes it with or without a key password; the key then stays out of Spark's options).
  Otherwise the files are read where the settings are translated (the Spark driver) and
  passed inline as ``ssl.keystore.certificate.chain`` and ``ssl.keystore.key``, which also spares
  the executors from needing the files. Either way the key is read and checked first: Kafka
  reads PKCS#8 keys only (``BEGIN PRIVATE KEY`` or ``BEGIN ENCRYPTED PRIVATE KEY``), an encrypted
  key needs ``ssl.key.password`` and an unencrypted one must not get it (Kafka would try to
  decrypt it), and Java 17 cannot decrypt PBES2, OpenSSL 3's default key encryption ("PBES2
  SecretKeyFactory not available"); each is refused with the openssl command that fixes it.
- A PKCS#12 keystore (``ssl.keystore.location`` + ``ssl.keystore.password``) stays one.
- ``enable.ssl.certificate.verification=false`` has no Java equivalent (the client has no switch
  to trust any certificate); it is refused.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from airflow_provider_eos.kafka.settings.values import JAVA, as_bool, as_text, refuse, sasl_mechanism

__all__ = ["JAAS_LOGIN_MODULES", "KERBEROS_SERVICE_NAME", "jaas_config", "java_sasl", "java_ssl"]

log = logging.getLogger(__name__)

#: librdkafka's (and kafka-python's) ``sasl.kerberos.service.name`` when the spec sets none.
KERBEROS_SERVICE_NAME = "kafka"

#: The login module of each SASL mechanism that authenticates with a user name and password.
JAAS_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_KRB5_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"

_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----")
_PRIVATE_KEY = re.compile(r"-----BEGIN ((?:[A-Z]+ )?)PRIVATE KEY-----[\s\S]+?-----END \1PRIVATE KEY-----")
_TO_PKCS8 = "openssl pkcs8 -topk8 -in client.key -out client.pkcs8.key (add -nocrypt to keep it unencrypted)"
# DER of the PBES2 algorithm identifier (OID 1.2.840.113549.1.5.13).
_PBES2_OID = bytes.fromhex("06092a864886f70d01050d")


def _jaas_quote(value: str) -> str:
    # JAAS option values are Java StreamTokenizer strings: backslash escapes, no raw line breaks.
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def jaas_config(login_module: str, **options: str) -> str:
    """One ``sasl.jaas.config`` entry: ``<module> required key="value" ...;`` with values quoted and escaped.

    :param login_module: the Java class of the login module.
    :param options: the module's options, in order.
    """
    rendered = " ".join(f"{name}={_jaas_quote(value)}" for name, value in options.items())
    return f"{login_module} required {rendered};"


def java_sasl(  # noqa: C901  # one branch per SASL mechanism family
    settings: Mapping[str, Any], protocol: str
) -> dict[str, str]:
    """``sasl.mechanism``, ``sasl.jaas.config`` and Kerberos' service name from librdkafka's SASL keys.

    :param settings: the spec's SASL keys (``sasl.mechanism(s)``, ``sasl.username``,
        ``sasl.password``, ``sasl.kerberos.service.name``, ``sasl.kerberos.principal``,
        ``sasl.kerberos.keytab``).
    :param protocol: the translated ``security.protocol``.
    :raises KafkaConfigError: for a mechanism without a translation or credentials that do not fit it.
    """
    key = "sasl.mechanisms" if "sasl.mechanisms" in settings else "sasl.mechanism"
    if "sasl.mechanism" in settings and "sasl.mechanisms" in settings:
        raise refuse("sasl.mechanisms", None, "is set together with sasl.mechanism", "set only sasl.mechanism")
    # librdkafka's default mechanism is GSSAPI, as the Java client's.
    mechanism = sasl_mechanism(key, settings[key]) if key in settings else "GSSAPI"
    out = {"sasl.mechanism": mechanism} if key in settings else {}
    service = settings.get("sasl.kerberos.service.name")
    if service is not None:
        out["sasl.kerberos.service.name"] = as_text(service)
    elif mechanism == "GSSAPI" and protocol.startswith("SASL_"):
        # The Java client has no default: without it every login fails with "No serviceName defined in
        # either JAAS or Kafka config", while the librdkafka and kafka-python clients of the same spec
        # reach the brokers' service as kafka. A JVM JAAS file naming another serviceName now conflicts
        # loudly, as it should: the other clients would authenticate to a different service.
        out["sasl.kerberos.service.name"] = KERBEROS_SERVICE_NAME
    has_login = "sasl.username" in settings or "sasl.password" in settings
    if mechanism in JAAS_LOGIN_MODULES:
        for needed in ("sasl.username", "sasl.password"):
            if needed not in settings and (has_login or protocol.startswith("SASL_")):
                raise refuse(
                    needed, JAVA, f"is missing for SASL {mechanism}", f"set {needed} for the pipeline's principal"
                )
        if has_login:
            out["sasl.jaas.config"] = jaas_config(
                JAAS_LOGIN_MODULES[mechanism],
                username=as_text(settings["sasl.username"]),
                password=str(settings["sasl.password"]),
            )
        return out
    if has_login:
        raise refuse(
            "sasl.username",
            JAVA,
            f"a user name and password mean nothing to SASL {mechanism}",
            "set sasl.mechanism to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
        )
    if mechanism == "OAUTHBEARER":
        raise refuse(
            key,
            JAVA,
            "OAUTHBEARER is not translated",
            "authenticate the pipeline's principal with SASL PLAIN or SCRAM (sasl.username and sasl.password)",
        )
    keytab, principal = settings.get("sasl.kerberos.keytab"), settings.get("sasl.kerberos.principal")
    if keytab is not None:
        if principal is None:
            raise refuse(
                "sasl.kerberos.principal", JAVA, "is missing next to sasl.kerberos.keytab", "set the keytab's principal"
            )
        out["sasl.jaas.config"] = (
            f"{_KRB5_LOGIN_MODULE} required useKeyTab=true storeKey=true "
            f"keyTab={_jaas_quote(as_text(keytab))} principal={_jaas_quote(as_text(principal))};"
        )
    elif principal is not None:
        raise refuse(
            "sasl.kerberos.principal",
            JAVA,
            "a principal without sasl.kerberos.keytab cannot log in",
            "set sasl.kerberos.keytab, or remove the principal and log in through the JVM's JAAS file",
        )
    return out


def _read_pem(key: str, path: str) -> str:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise refuse(
            key,
            JAVA,
            f"cannot read {path!r} ({type(exc).__name__}); it is read where Spark's Kafka options are built "
            "(the driver) and passed to the executors inline",
            "make the file readable on the Spark driver (ship it with --files), or put the PEM in the "
            "ssl.certificate.pem / ssl.key.pem settings",
        ) from None


def _certificate_chain(key: str, pem: str) -> str:
    certificates = _CERTIFICATE.findall(pem)
    if not certificates:
        raise refuse(key, JAVA, "holds no PEM certificate (-----BEGIN CERTIFICATE-----)", "point it at a PEM file")
    return "\n".join(certificates)


def _pkcs8_key(key: str, pem: str, password: object) -> str:
    match = _PRIVATE_KEY.search(pem)
    if match is None:
        raise refuse(key, JAVA, "holds no PEM private key", "point it at the client's PEM private key")
    kind = match.group(1).strip()
    if kind not in ("", "ENCRYPTED"):
        raise refuse(
            key,
            JAVA,
            f"is a PKCS#1 {kind} key; Kafka's Java client reads PKCS#8 keys only",
            f"convert it: {_TO_PKCS8}",
        )
    if kind == "ENCRYPTED":
        if password is None:
            raise refuse("ssl.key.password", JAVA, "is missing for an encrypted private key", "set ssl.key.password")
        try:
            der = base64.b64decode("".join(match.group(0).splitlines()[1:-1]))
        except binascii.Error:
            raise refuse(key, JAVA, "holds a private key that is not valid PEM", "export the key again") from None
        if _PBES2_OID in der:
            raise refuse(
                key,
                JAVA,
                "is encrypted with PBES2 (OpenSSL 3's default), which Java 17 cannot decrypt "
                "('PBES2 SecretKeyFactory not available')",
                "re-encrypt it: openssl pkcs8 -topk8 -v1 PBE-SHA1-3DES -in client.key -out client.pkcs8.key, "
                "or use an unencrypted PKCS#8 key in a file readable only by the job",
            )
    return match.group(0)


def _truststore(settings: Mapping[str, Any]) -> dict[str, str]:
    location, pem = settings.get("ssl.ca.location"), settings.get("ssl.ca.pem")
    if location is not None and pem is not None:
        raise refuse("ssl.ca.pem", JAVA, "is set together with ssl.ca.location", "set only one of them")
    if pem is not None:
        return {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": _certificate_chain("ssl.ca.pem", str(pem))}
    if location is None:
        return {}
    path = as_text(location)
    if path.lower() == "probe":
        # librdkafka's probe uses the system's CA store; the Java client without a truststore the JVM's.
        log.debug("kafka['ssl.ca.location'] 'probe': the Java client uses the JVM's default truststore")
        return {}
    if Path(path).is_dir():
        raise refuse(
            "ssl.ca.location",
            JAVA,
            f"{path!r} is a CA directory; the Java client reads one PEM file",
            "concatenate the CA certificates into one PEM file and point ssl.ca.location at it",
        )
    return {"ssl.truststore.type": "PEM", "ssl.truststore.location": path}


def _keystore(settings: Mapping[str, Any]) -> dict[str, str]:  # noqa: C901  # three exclusive keystore forms
    get = settings.get
    password = get("ssl.key.password")
    pem_pair = (get("ssl.certificate.pem"), get("ssl.key.pem"))
    file_pair = (get("ssl.certificate.location"), get("ssl.key.location"))
    pkcs12 = (get("ssl.keystore.location"), get("ssl.keystore.password"))
    given = [name for name, pair in (("PEM", pem_pair), ("files", file_pair), ("PKCS#12", pkcs12)) if any(pair)]
    if len(given) > 1:
        raise refuse(
            "ssl.keystore.location" if "PKCS#12" in given else "ssl.certificate.pem",
            JAVA,
            f"the client certificate is given more than one way ({', '.join(given)})",
            "set one of: ssl.certificate.location + ssl.key.location, ssl.certificate.pem + ssl.key.pem, "
            "ssl.keystore.location + ssl.keystore.password",
        )
    if any(pkcs12):
        location, store_password = pkcs12
        if location is None or store_password is None:
            missing = "ssl.keystore.location" if location is None else "ssl.keystore.password"
            raise refuse(missing, JAVA, "is missing for the PKCS#12 keystore", f"set {missing}")
        out = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": as_text(location)}
        out["ssl.keystore.password"] = str(store_password)
        return out | ({"ssl.key.password": str(password)} if password is not None else {})
    names, pair = (("ssl.certificate.pem", "ssl.key.pem"), pem_pair) if any(pem_pair) else (
        ("ssl.certificate.location", "ssl.key.location"),
        file_pair,
    )
    if not any(pair):
        if password is not None:
            log.debug("kafka['ssl.key.password'] without a client key: no keystore for the Java client")
        return {}
    for name, value in zip(names, pair, strict=True):
        if value is None:
            raise refuse(name, JAVA, f"is missing next to {names[1 - names.index(name)]}", f"set {name}")
    certificate, key = (str(value) for value in pair)
    one_file = None
    if names[0] == "ssl.certificate.location":
        one_file = as_text(certificate) if as_text(certificate) == as_text(key) else None
        certificate, key = _read_pem(names[0], as_text(certificate)), _read_pem(names[1], as_text(key))
    chain, key_block = _certificate_chain(names[0], certificate), _pkcs8_key(names[1], key, password)
    if one_file is not None:
        out = {"ssl.keystore.type": "PEM", "ssl.keystore.location": one_file}
    else:
        out = {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": chain, "ssl.keystore.key": key_block}
    if "ENCRYPTED PRIVATE KEY" in key_block:
        out["ssl.key.password"] = str(password)
    elif password is not None:
        # Kafka would try to decrypt an unencrypted key with it and fail; librdkafka ignores it.
        log.debug("kafka['ssl.key.password'] is not needed: the private key is not encrypted")
    return out


def java_ssl(settings: Mapping[str, Any]) -> dict[str, str]:
    """Truststore, keystore and hostname verification from librdkafka's SSL keys.

    :param settings: the spec's ``ssl.*`` keys and ``enable.ssl.certificate.verification``.
    :raises KafkaConfigError: for a setting the Java client cannot express.
    """
    out = _truststore(settings) | _keystore(settings)
    if "ssl.endpoint.identification.algorithm" in settings:
        algorithm = as_text(settings["ssl.endpoint.identification.algorithm"]).lower()
        if algorithm not in ("https", "none", ""):
            raise refuse(
                "ssl.endpoint.identification.algorithm", None, f"is {algorithm!r}", "use 'https' or 'none'"
            )
        out["ssl.endpoint.identification.algorithm"] = "https" if algorithm == "https" else ""
    verify = settings.get("enable.ssl.certificate.verification")
    if verify is not None and as_bool("enable.ssl.certificate.verification", verify):
        log.debug("kafka['enable.ssl.certificate.verification'] true is the Java client's only behaviour")
    elif verify is not None:
        raise refuse(
            "enable.ssl.certificate.verification",
            JAVA,
            "false has no equivalent: the Java client always verifies the brokers' certificates",
            "set ssl.ca.location to the CA that signed the brokers' certificates (and "
            "ssl.endpoint.identification.algorithm to none if their host names do not match)",
        )
    return out
