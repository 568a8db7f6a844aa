"""Where the DAGs find the pipelines: one folder of spec files, configured once.

``$EOS_SPECS_DIR`` if set, else ``pipelines/`` next to the DAG files. Parsing a spec is a YAML
read and a pydantic validation: cheap enough for DAG parse time, and an invalid spec shows up as
a DAG import error that names the file and the field.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.spec import SPEC_SUFFIXES, PipelineSpec

SPECS_DIR_ENV = "EOS_SPECS_DIR"


def specs_directory(default: Path) -> Path:
    """The configured specs folder (``$EOS_SPECS_DIR``), else ``default``."""
    return Path(os.environ.get(SPECS_DIR_ENV) or default).expanduser().resolve()


def discover_specs(directory: Path) -> dict[str, Path]:
    """``{pipeline name: spec file}`` for every spec file in ``directory``, sorted by name."""
    found: dict[str, Path] = {}
    if not directory.is_dir():
        return found
    for path in sorted(directory.iterdir()):
        if path.suffix.lower() in SPEC_SUFFIXES and path.is_file():
            found[PipelineSpec.load(path).name] = path
    return dict(sorted(found.items()))


def spec_path_lookup(specs: dict[str, Path], directory: Path) -> Callable[[str], str]:
    """A template macro: pipeline name -> spec file, with an error that lists the known pipelines."""

    def spec_path_of(name: str) -> str:
        if name not in specs:
            raise SpecError(f"pipeline {name!r} has no spec in {directory}; known: {sorted(specs)}",
                            fix=f"add a spec file named for it to {directory} (or set ${SPECS_DIR_ENV})")
        return str(specs[name])

    return spec_path_of
