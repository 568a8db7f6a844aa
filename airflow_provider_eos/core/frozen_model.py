"""The one base of this package's value models: frozen pydantic models with a JSON form.

Reports, plans, samples and rows are immutable values: frozen (hence hashable), and
``model_dump(mode="json")`` (alias :meth:`FrozenModel.to_dict`) is the JSON that XCom, the CLI's
``--json`` and the manifests carry; ``model_validate`` reads it back. Fields may have an alias
for their JSON key; a model then accepts either spelling and dumps the alias.

Fields are given by name, as pydantic asks: a call site then says what each value is.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["FrozenModel"]


class FrozenModel(BaseModel):
    """Frozen, hashable pydantic model with a JSON form."""

    # validate_by_name and serialize_by_alias came with pydantic 2.11 (older ones ignore them: setup.cfg's floor).
    model_config = ConfigDict(frozen=True, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    def to_dict(self) -> dict[str, Any]:
        """The model as JSON-serializable values (``model_dump(mode="json")``)."""
        return self.model_dump(mode="json")
