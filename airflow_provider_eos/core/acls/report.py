"""The ACL set of one role on one pipeline, and what an apply did.

Its text is :func:`airflow_provider_eos.core.presentation.acls_text`.
"""

from __future__ import annotations

from airflow_provider_eos.core.acls.acl import Acl, Role
from airflow_provider_eos.core.frozen_model import FrozenModel

__all__ = ["AclSetReport"]


class AclSetReport(FrozenModel):
    """One role's ACLs for one principal on one pipeline.

    :param pipeline: the pipeline's name.
    :param principal: ``User:NAME``.
    :param role: ``job``, ``recovery`` or ``health``.
    :param acls: the set, each ACL with its reason.
    :param applied: whether the set was applied to a cluster.
    :param created: the ACLs the apply created.
    :param already_present: the ACLs the cluster held already.
    :param warnings: what makes the set grant more than the pipeline (an ACL pattern that covers
        another pipeline's transactional ids).
    :param others_checked: how many other pipelines the set was checked against (``None``: no
        specs folder was known, so none were).
    """

    pipeline: str
    principal: str
    role: Role
    acls: tuple[Acl, ...]
    applied: bool = False
    created: tuple[Acl, ...] = ()
    already_present: tuple[Acl, ...] = ()
    warnings: tuple[str, ...] = ()
    others_checked: int | None = None
