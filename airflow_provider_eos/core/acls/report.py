"""The ACL set of one role on one pipeline as ``eos acls`` prints it, and what an apply did."""

from __future__ import annotations

from airflow_provider_eos.core.acls.model import Acl, Role
from airflow_provider_eos.core.model import FrozenModel
from airflow_provider_eos.core.report_table import render_table

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

    def summary(self) -> str:
        """One line: the set and, after an apply, what it changed."""
        head = f"{len(self.acls)} ACL(s) for {self.principal} as {self.role} of pipeline {self.pipeline!r}"
        if not self.applied:
            return head + " (printed only; --apply --admin-config FILE creates them)"
        return head + f": applied, {len(self.created)} created, {len(self.already_present)} already present"

    def render(self) -> str:
        """The summary, the table (resource type, pattern, name, operation, why), the cautions, then the warnings."""
        created = {acl.binding for acl in self.created}
        headers = ["resource type", "pattern", "name", "operation", "why"]
        rows: list[list[object]] = []
        for acl in self.acls:
            row: list[object] = [acl.resource_type, acl.pattern, acl.name, acl.operation, acl.why]
            if self.applied:
                row.insert(4, "created" if acl.binding in created else "present")
            rows.append(row)
        if self.applied:
            headers.insert(4, "apply")
        lines = [self.summary(), "", render_table(headers, rows)]
        cautions = [acl for acl in self.acls if acl.caution]
        if cautions:
            lines += ["", "Caution:"]
            lines += [f"  {acl.resource_type.value} {acl.name} {acl.operation.value}: {acl.caution}"
                      for acl in cautions]
        lines.append("")
        lines += [f"Warning: {warning}" for warning in self.warnings]
        if self.others_checked is None:
            lines.append("The other pipelines were not checked (no --specs-dir or $EOS_SPECS_DIR): a transactional "
                         "id pattern may cover another pipeline's ids.")
        elif not self.warnings:
            lines.append(f"No ACL of the set covers the transactional ids of the {self.others_checked} other "
                         "pipeline(s) in the specs folder.")
        return "\n".join(lines)
