"""A throw-away certificate authority and a broker certificate for the secured devstack (``sasl_ssl``).

Generated with the ``cryptography`` library: a CA whose private key never touches the disk (it
signs the one broker certificate and is forgotten, so nothing else can ever be issued under it),
and a broker certificate for ``127.0.0.1`` (an IP subject alternative name, which is what the
clients verify: they connect to the address, not to a name) and ``localhost``.

The broker's key store is one PEM file holding the unencrypted PKCS#8 key and the certificate
chain, the form Kafka's file-based PEM key store reads (KIP-651); it is written with mode 0600.
The CA certificate is public: clients trust it through ``ssl.ca.location`` (librdkafka,
kafka-python) or a PEM trust store (the Java client).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from airflow_provider_eos.devstack.private_files import write_private

__all__ = ["BrokerTls", "write_broker_tls"]

# Long enough for any development session, short enough that a leaked store goes stale.
_VALIDITY = dt.timedelta(days=30)
_KEY_BITS = 2048  # RSA: every client (OpenSSL, Python's ssl, the JDK's PEM reader) takes it


@dataclass(frozen=True)
class BrokerTls:
    """Where the broker's TLS files are.

    :param ca_file: the CA certificate (PEM), what clients trust.
    :param keystore_file: the broker's key and certificate chain (PEM, mode 0600).
    """

    ca_file: Path
    keystore_file: Path


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=_KEY_BITS)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "eos devstack"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem(certificate: x509.Certificate) -> str:
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


def write_broker_tls(folder: Path, *, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> BrokerTls:
    """Generate a CA and a broker certificate for ``hosts``; write ``ca.pem`` and ``broker.keystore.pem``.

    :param folder: the broker's state folder (existing).
    :param hosts: IP addresses and host names the broker certificate is valid for.
    """
    now = dt.datetime.now(dt.UTC)
    not_before, not_after = now - dt.timedelta(minutes=5), now + _VALIDITY  # minutes: clock skew between processes
    ca_key, broker_key = _new_key(), _new_key()
    ca_name = _name("eos devstack CA")
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    broker = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0])).issuer_name(ca_name).public_key(broker_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=True,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        # clientAuth too: the broker is a TLS client of its own listener (inter-broker requests).
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(broker_key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = broker_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    ca_file = folder / "ca.pem"
    ca_file.write_text(_pem(ca))
    keystore = write_private(folder / "broker.keystore.pem", key_pem + _pem(broker) + _pem(ca))
    return BrokerTls(ca_file=ca_file, keystore_file=keystore)
