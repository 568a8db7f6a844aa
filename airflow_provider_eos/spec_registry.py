"""Where the DAGs find the pipelines: one folder of spec files, configured once.

``$EOS_SPECS_DIR`` if set, else ``pipelines/`` next to the DAG files. Parsing a spec is a YAML
read and a pydantic validation: cheap enough for DAG parse time, and an invalid spec shows up as
a DAG import error that names the file and the field.
"""

from __future__ import annotations

import os
from pathlib import Path

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
