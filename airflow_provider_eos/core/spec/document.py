"""Reading one spec file: a ``.yaml``, ``.yml`` or ``.json`` document holding the spec's fields.

Every way a file can fail (wrong suffix, missing, unreadable, too large, not UTF-8, bad syntax,
alias bomb, empty) is a :class:`SpecError` naming the file, and the line and column where the
text says where; never the text itself, which may hold secrets (:mod:`.bounded_yaml`).
Validating the fields is the model's job; the document gives it where each key is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.spec.bounded_yaml import (
    LocationMap,
    YamlBoundsError,
    compose_bounded,
    describe_yaml_error,
)

__all__ = ["MAX_SPEC_BYTES", "SPEC_SUFFIXES", "SpecDocument", "read_spec_document"]

#: File suffixes :meth:`PipelineSpec.load` and :func:`load_specs` read.
SPEC_SUFFIXES = (".yaml", ".yml", ".json")
#: A spec is a few KiB; a larger file is refused before it is parsed (parsing time grows with it).
MAX_SPEC_BYTES = 64 * 1024


class SpecDocument(BaseModel):
    """A spec file's content, not yet validated, and where each of its keys is.

    :param data: the parsed document (may hold secrets: kept out of ``repr``).
    :param locations: 1-based ``(line, column)`` of each key and list item, by path; empty when unknown.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    data: Any = Field(repr=False)
    locations: LocationMap = Field(default_factory=dict, repr=False)


def _read_text(file: Path) -> str:
    try:
        size = file.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise SpecError(
                f"spec file {str(file)!r} is {size // 1024} KiB, larger than a spec's {MAX_SPEC_BYTES // 1024} KiB",
                fix="check that this is a pipeline spec; a spec is a few dozen settings",
            )
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(
            f"spec file {str(file)!r} does not exist",
            fix="check the path (relative paths resolve against the current directory)",
        ) from None
    except UnicodeDecodeError as err:
        raise SpecError(
            f"spec file {str(file)!r} is not UTF-8 text (byte {err.start})",
            fix="save the file as UTF-8",
        ) from None
    except OSError as err:
        raise SpecError(
            f"spec file {str(file)!r} cannot be read: {err.strerror or type(err).__name__}",
            fix="check the file's permissions",
        ) from None


def _parse_json(file: Path, text: str) -> SpecDocument:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        # The message is the parser's problem only (no text), then where.
        raise SpecError(
            f"spec file {str(file)!r} is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}",
            fix="fix the syntax at the position given above",
        ) from None
    except RecursionError:
        raise SpecError(f"spec file {str(file)!r} nests too deeply to be a spec",
                        fix="check that this is a pipeline spec") from None
    try:
        # JSON is YAML too: the YAML reader knows where each key is.
        _, locations = compose_bounded(text)
    except (yaml.YAMLError, YamlBoundsError):
        locations = {}
    return SpecDocument(data=data, locations=locations)


def _parse_yaml(file: Path, text: str) -> SpecDocument:
    try:
        data, locations = compose_bounded(text)
    except yaml.YAMLError as err:
        raise SpecError(
            f"spec file {str(file)!r} is not valid YAML: {describe_yaml_error(err, text)}",
            fix="fix the syntax at the line and column given above; quote a value that starts with "
            "one of * & ! % @ ` | > or holds ': '",
        ) from None
    except YamlBoundsError as err:
        raise SpecError(
            f"spec file {str(file)!r} is refused: its YAML {err}",
            fix="write the spec's values out; a spec needs no nested aliases (*name) or deep nesting",
        ) from None
    return SpecDocument(data=data, locations=locations)


def read_spec_document(file: Path) -> SpecDocument:
    """The parsed content of a spec file (not yet validated): JSON for ``.json``, else YAML.

    :raises SpecError: naming the file if its suffix is not a spec's, or it is missing,
        unreadable, too large, malformed, an alias bomb or empty; never quoting its content.
    """
    if not file.exists():
        # Before the suffix: "orders.yml" mistyped as "orders.yaml.txt" is first of all not there.
        raise SpecError(
            f"spec file {str(file)!r} does not exist",
            fix="check the path (relative paths resolve against the current directory)",
        )
    if file.suffix.lower() not in SPEC_SUFFIXES:
        raise SpecError(
            f"spec file {str(file)!r} has suffix {file.suffix!r}; pipeline specs are YAML or JSON",
            fix=f"name the file with one of {', '.join(SPEC_SUFFIXES)}",
        )
    text = _read_text(file)
    document = _parse_json(file, text) if file.suffix.lower() == ".json" else _parse_yaml(file, text)
    if document.data is None:
        raise SpecError(
            f"spec file {str(file)!r} is empty",
            fix="write the pipeline's fields into it, or remove it",
        )
    return document
