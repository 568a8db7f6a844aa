"""The secured devstack broker: SASL/SCRAM users, the authorizer, TLS, and the admin's ``client.config``.

``LocalKafka(security="sasl_plaintext" | "sasl_ssl")`` starts the broker with:

- one client listener, ``CLIENT``, on SASL_PLAINTEXT or SASL_SSL, taking SCRAM-SHA-512 only; it is
  also the inter-broker listener, so the broker's own requests (transaction markers it sends to
  itself) pass through the same authentication;
- the ``StandardAuthorizer`` with ``allow.everyone.if.no.acl.found=false``: a principal without
  ACLs may do nothing;
- two SCRAM users created when the storage is formatted (``StorageTool --add-scram``), each with
  a random password: ``admin``, the operator's super user (its settings go to ``client.config``),
  and ``broker``, the broker's own identity;
- ``super.users=User:admin;User:broker``, nothing wider. KRaft needs the broker's identity
  there: the controller authorizes the broker's registration and heartbeats (CLUSTER_ACTION),
  the broker its own transaction markers and forwarded requests, and no ACL can be created
  before the broker has registered.

The controller listener is SASL_PLAINTEXT with PLAIN (a static user ``broker`` in the listener's
JAAS config), not SCRAM: SCRAM credentials live in the metadata log the controller serves, so a
controller cannot use them to authenticate the very connections that fetch that log. PLAIN keeps
a named principal on it (PLAINTEXT would make the broker ``User:ANONYMOUS``, which would then
have to be a super user), and the listener is bound to 127.0.0.1, so TLS would add nothing.

Secrets stay out of process command lines: the SCRAM passwords reach ``StorageTool`` in a Java
argument file (``@file``), and every file holding a secret (``server.properties``,
``client.config``, the broker's key store) has mode 0600.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.devstack.private_files import write_private
from airflow_provider_eos.kafka.settings.java_security import JAAS_LOGIN_MODULES, jaas_config

if TYPE_CHECKING:
    from airflow_provider_eos.devstack.tls import BrokerTls

__all__ = [
    "ADMIN_USER",
    "BROKER_USER",
    "CLIENT_CONFIG",
    "SCRAM_MECHANISM",
    "SECURITY_MODES",
    "BrokerSecrets",
    "Security",
    "add_scram_user",
    "check_security",
    "new_password",
    "read_client_config",
]

log = logging.getLogger(__name__)

#: ``plaintext``: no authentication (the default devstack); the others: SCRAM users and ACLs.
Security = Literal["plaintext", "sasl_plaintext", "sasl_ssl"]
SECURITY_MODES: tuple[str, ...] = get_args(Security)

ADMIN_USER = "admin"
BROKER_USER = "broker"
SCRAM_MECHANISM = "SCRAM-SHA-512"
CLIENT_CONFIG = "client.config"
_SCRAM_ITERATIONS = 8192  # Kafka's minimum for SCRAM-SHA-512 is 4096
_CLIENT_LISTENER = "CLIENT"


def check_security(security: str) -> Security:
    """``security`` if it is one of :data:`SECURITY_MODES`.

    :raises DevstackError: naming the modes.
    """
    if security not in SECURITY_MODES:
        raise DevstackError(f"Unknown devstack security mode {security!r}.",
                            fix=f"use one of {', '.join(SECURITY_MODES)}.")
    return security  # type: ignore[return-value]


def new_password() -> str:
    """A random password (256 bits, URL-safe characters: nothing to quote in JAAS or StorageTool arguments)."""
    return secrets.token_urlsafe(32)


class BrokerSecrets:
    """The passwords and TLS files of one secured broker, generated into its state folder.

    :param state_dir: the broker's (fresh) state folder.
    :param security: ``sasl_plaintext`` or ``sasl_ssl``.
    """

    def __init__(self, state_dir: Path, security: Security) -> None:
        self.state_dir, self.security = state_dir, security
        self.admin_password, self.broker_password = new_password(), new_password()
        self.tls: BrokerTls | None = None
        if security == "sasl_ssl":
            from airflow_provider_eos.devstack.tls import write_broker_tls  # cryptography: only when needed

            self.tls = write_broker_tls(state_dir)

    @property
    def protocol(self) -> str:
        return self.security.upper()

    def server_properties(self, port: int, controller_port: int) -> dict[str, str]:
        """Broker settings replacing the plaintext listeners (see the module docstring)."""
        scram = jaas_config(JAAS_LOGIN_MODULES[SCRAM_MECHANISM], username=BROKER_USER, password=self.broker_password)
        # The controller side checks user_<name>; the broker side logs in with username/password.
        plain = jaas_config(JAAS_LOGIN_MODULES["PLAIN"], username=BROKER_USER, password=self.broker_password,
                            **{f"user_{BROKER_USER}": self.broker_password})
        client = f"listener.name.{_CLIENT_LISTENER.lower()}"
        settings = {
            "listeners": f"{_CLIENT_LISTENER}://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"{_CLIENT_LISTENER}://127.0.0.1:{port}",
            "inter.broker.listener.name": _CLIENT_LISTENER,
            "listener.security.protocol.map": f"{_CLIENT_LISTENER}:{self.protocol},CONTROLLER:SASL_PLAINTEXT",
            "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
            f"{client}.sasl.enabled.mechanisms": SCRAM_MECHANISM,
            f"{client}.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": scram,
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": plain,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "false",
            "super.users": f"User:{ADMIN_USER};User:{BROKER_USER}",
        }
        if self.tls is not None:
            settings |= {
                f"{client}.ssl.keystore.type": "PEM",
                f"{client}.ssl.keystore.location": str(self.tls.keystore_file),
                f"{client}.ssl.truststore.type": "PEM",
                f"{client}.ssl.truststore.location": str(self.tls.ca_file),
            }
        return settings

    def format_argfile(self, command: list[str]) -> Path:
        """A Java ``@argfile`` (mode 0600) holding ``command`` plus the ``--add-scram`` arguments of both users.

        The caller runs ``java <jvm options> @<file>`` and deletes the file afterwards.
        """
        users = [f"{SCRAM_MECHANISM}=[name={name},password={password},iterations={_SCRAM_ITERATIONS}]"
                 for name, password in ((ADMIN_USER, self.admin_password), (BROKER_USER, self.broker_password))]
        arguments = [*command, *(part for user in users for part in ("--add-scram", user))]
        # Quoted, with backslash escapes (the launcher's argfile syntax): paths may hold blanks.
        text = "\n".join('"' + a.replace("\\", "\\\\").replace('"', '\\"') + '"' for a in arguments) + "\n"
        return write_private(self.state_dir / "format.args", text)

    def write_client_config(self, bootstrap_servers: str) -> Path:
        """Write the admin's librdkafka settings as ``client.config`` (JSON, mode 0600)."""
        settings: dict[str, Any] = {
            "bootstrap.servers": bootstrap_servers,
            "security.protocol": self.protocol,
            "sasl.mechanism": SCRAM_MECHANISM,
            "sasl.username": ADMIN_USER,
            "sasl.password": self.admin_password,
        }
        if self.tls is not None:
            settings["ssl.ca.location"] = str(self.tls.ca_file)
        return write_private(self.state_dir / CLIENT_CONFIG, json.dumps(settings, indent=2) + "\n")


def read_client_config(path: Path | str) -> dict[str, Any]:
    """The librdkafka settings in a ``client.config`` file.

    :raises DevstackError: if the file is missing or not a JSON object.
    """
    try:
        settings = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise DevstackError(f"Cannot read the devstack client config {path} ({type(exc).__name__}).",
                            fix="run `eos devstack down` and `eos devstack up --security ...` again.") from exc
    if not isinstance(settings, dict):
        raise DevstackError(f"{path} is not a JSON object of librdkafka settings.",
                            fix="run `eos devstack down` and `eos devstack up --security ...` again.")
    return settings


def add_scram_user(admin_settings: Mapping[str, Any], name: str, *, password: str | None = None,
                   timeout_s: float = 30) -> str:
    """Create (or reset) the SCRAM-SHA-512 user ``name`` through the admin API; return its password.

    Returns once the broker authenticates the user. The user has no ACLs: with the devstack's
    authorizer it may connect but do nothing until ACLs are granted.

    :param admin_settings: librdkafka settings of a principal allowed to alter SCRAM credentials
        (the devstack's ``client.config``).
    :param name: the user name (the principal is ``User:<name>``).
    :param password: the password to set; a random one by default.
    :raises DevstackError: if the broker refuses or does not answer.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    from airflow_provider_eos.kafka.settings import with_client_logger

    password = password or new_password()
    admin = AdminClient(with_client_logger("admin", admin_settings))
    upsert = UserScramCredentialUpsertion(
        name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, _SCRAM_ITERATIONS), password.encode()
    )
    try:
        admin.alter_user_scram_credentials([upsert])[name].result(timeout_s)
    except KafkaException as exc:
        raise DevstackError(f"Creating the SCRAM user {name!r} failed: {exc.args[0]}",
                            fix="authenticate with the devstack's client.config (the admin super user).") from exc
    _wait_until_login_works(admin_settings, name, password, timeout_s)
    return password


def _wait_until_login_works(admin_settings: Mapping[str, Any], name: str, password: str, timeout_s: float) -> None:
    """The credential reaches the broker's authenticator through the metadata log, a moment after the call."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from airflow_provider_eos.kafka.settings import with_client_logger

    settings = {**admin_settings, "sasl.username": name, "sasl.password": password}
    deadline = time.monotonic() + timeout_s
    while True:
        # A metadata request needs no ACL (it lists only the topics the principal may describe).
        client = AdminClient(with_client_logger("probe-admin", settings))
        try:
            client.list_topics(timeout=min(5.0, timeout_s))
            return
        except KafkaException as exc:
            if time.monotonic() > deadline:
                raise DevstackError(f"The new SCRAM user {name!r} cannot log in after {timeout_s:.0f}s: "
                                    f"{exc.args[0]}", fix="read the broker log (eos devstack status).") from exc
        time.sleep(0.2)
