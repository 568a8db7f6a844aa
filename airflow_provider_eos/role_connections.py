"""Which Airflow ``kafka`` connection each role's tasks authenticate with.

A secured cluster gives each role its own principal with only its own ACLs (``eos acls``): the
job (pre-flight and the Spark job), recovery (abort, verify, rewind, align) and health (the
sensors and the scheduled health check). The DAGs read the connection of a role from
``$EOS_KAFKA_CONN_ID_<ROLE>`` (``EOS_KAFKA_CONN_ID_JOB``, ``..._RECOVERY``, ``..._HEALTH``) or
``[eos] kafka_conn_id_<role>``, else from ``$EOS_KAFKA_CONN_ID`` or ``[eos] kafka_conn_id`` (one
connection for every role); with neither, tasks use the spec's own ``kafka`` settings. Read at DAG
parse time, like the specs folder: a deployment setting, not a trigger parameter, so whoever
triggers a run cannot pick another role's credentials.
"""

from __future__ import annotations

from airflow_provider_eos.configuration import setting
from airflow_provider_eos.core.acls import Role, check_role

SHARED_CONN_ENV = "EOS_KAFKA_CONN_ID"


def role_conn_env(role: Role) -> str:
    """The environment variable naming ``role``'s connection, e.g. ``EOS_KAFKA_CONN_ID_RECOVERY``."""
    return f"{SHARED_CONN_ENV}_{role.upper()}"


def kafka_conn_id(role: Role) -> str | None:
    """The ``kafka`` connection id for ``role``'s tasks, or ``None`` for the spec's own settings.

    :raises AclError: for a role that is not job, recovery or health.
    """
    check_role(role)
    # The role's own connection (variable or option) before the shared one, each variable before its option.
    return setting(f"kafka_conn_id_{role}") or setting("kafka_conn_id")
