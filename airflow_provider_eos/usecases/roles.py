"""Which role's ACLs a use case runs on: a refusal inside it names that role's grant (docs/security.md).

The Kafka call sites raise :class:`~airflow_provider_eos.core.errors.AclMissingError` naming the
request and the ACL; only the use case knows whose task it was (recovery's verify, health's
probe), so :func:`runs_as` adds the command that grants that role's whole set.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from airflow_provider_eos.core.acls import Role, principal_of, required_acls
from airflow_provider_eos.core.acls.denials import for_role
from airflow_provider_eos.core.errors import AclMissingError
from airflow_provider_eos.usecases.clients import PipelineClients

if TYPE_CHECKING:
    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["role_refusal", "runs_as"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def runs_as(role: Role) -> Callable[[Callable[Concatenate[PipelineClients, _P], _R]],
                                     Callable[Concatenate[PipelineClients, _P], _R]]:
    """Decorate a use case whose first argument is its :class:`PipelineClients`: refusals name ``role``'s grant."""

    def decorate(use_case: Callable[Concatenate[PipelineClients, _P], _R]) -> Callable[
            Concatenate[PipelineClients, _P], _R]:
        @functools.wraps(use_case)
        def run(clients: PipelineClients, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return use_case(clients, *args, **kwargs)
            except AclMissingError as refused:
                raise role_refusal(refused, role, clients.spec) from refused.__cause__

        return run

    return decorate


def role_refusal(refused: AclMissingError, role: Role, spec: PipelineSpec) -> AclMissingError:
    """``refused`` as ``role``'s task on ``spec`` meets it: the role's ACL on the resource and the grant."""
    principal = refused.principal or principal_of(spec.kafka)[0] or "User:NAME"
    return for_role(refused, role, pipeline=spec.name, settings=spec.kafka,
                    role_acls=required_acls(spec, principal, role))
