"""The one base of this package's value models: frozen pydantic models with a JSON form.

Reports, plans, samples and rows are immutable values: frozen (hence hashable), and
``model_dump(mode="json")`` (alias :meth:`FrozenModel.to_dict`) is the JSON that XCom, the CLI's
``--json`` and the manifests carry; ``model_validate`` reads it back. Fields may have an alias
for their JSON key; a model then accepts either spelling and dumps the alias.

Positional arguments fill the fields in their declared order, as with the frozen dataclasses
these models replaced: the Kafka adapters build ``PartitionOffsets(tp, lso, hwm)`` and tests
``VerificationSample("IN_SYNC", True)``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["FrozenModel"]


class FrozenModel(BaseModel):
    """Frozen, hashable pydantic model that also takes its fields by position."""

    model_config = ConfigDict(frozen=True, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    def __init__(self, /, *args: Any, **data: Any) -> None:
        if args:
            names = list(type(self).model_fields)
            if len(args) > len(names):
                raise TypeError(f"{type(self).__name__} takes at most {len(names)} positional arguments")
            given = dict(zip(names, args, strict=False))
            twice = [name for name in given if name in data]
            if twice:
                raise TypeError(f"{type(self).__name__} got multiple values for {', '.join(map(repr, twice))}")
            data = {**given, **data}
        super().__init__(**data)

    def to_dict(self) -> dict[str, Any]:
        """The model as JSON-serializable values (``model_dump(mode="json")``)."""
        return self.model_dump(mode="json")
