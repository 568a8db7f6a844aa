"""Reading one spec file: a ``.yaml``, ``.yml`` or ``.json`` document holding the spec's fields.

Every way a file can fail (wrong suffix, missing, unreadable, not UTF-8, bad syntax, empty)
is a :class:`SpecError` naming the file; validating the fields is the model's job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from airflow_provider_eos.core.errors import SpecError

__all__ = ["SPEC_SUFFIXES", "read_spec_document"]

#: File suffixes :meth:`PipelineSpec.load` and :func:`load_specs` read.
SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def read_spec_document(file: Path) -> Any:
    """The parsed content of a spec file (not yet validated): JSON for ``.json``, else YAML.

    :raises SpecError: naming the file if its suffix is not a spec's, or it is missing,
        unreadable, malformed or empty.
    """
    if file.suffix.lower() not in SPEC_SUFFIXES:
        raise SpecError(
            f"spec file {str(file)!r} has suffix {file.suffix!r}; pipeline specs are YAML or JSON",
            fix=f"name the file with one of {', '.join(SPEC_SUFFIXES)}",
        )
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(
            f"spec file {str(file)!r} does not exist",
            fix="check the path (relative paths resolve against the current directory)",
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(
            f"spec file {str(file)!r} cannot be read: {err}",
            fix="check the file's permissions and that it is UTF-8 text",
        ) from None
    try:
        data = json.loads(text) if file.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise SpecError(
            f"spec file {str(file)!r} is not valid {'JSON' if file.suffix.lower() == '.json' else 'YAML'}: {err}",
            fix="fix the syntax at the position given above",
        ) from None
    if data is None:
        raise SpecError(
            f"spec file {str(file)!r} is empty",
            fix="write the pipeline's fields into it, or remove it",
        )
    return data
