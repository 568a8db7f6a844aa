"""Where the pipelines are found: one folder of spec files, configured once, for the DAGs and ``eos``.

``$EOS_SPECS_DIR`` if set; else the DAGs use ``pipelines/`` next to the DAG files, and ``eos
preflight`` its ``--specs-dir`` (without either, the sharing rules are "not checked"). The folder
is read by the one scanner, :func:`~airflow_provider_eos.core.spec.load_spec_files`: hidden files
and editor leftovers are skipped and a pipeline name used by two files is refused, naming both.
Parsing a spec is a YAML read and a pydantic validation: cheap enough for DAG parse time, and an
invalid spec shows up as a DAG import error that names the file and the field.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.spec import load_spec_files

SPECS_DIR_ENV = "EOS_SPECS_DIR"


def configured_specs_directory() -> Path | None:
    """The folder ``$EOS_SPECS_DIR`` names, or ``None`` when it is unset or empty."""
    value = os.environ.get(SPECS_DIR_ENV)
    return Path(value).expanduser().resolve() if value else None


def specs_directory(default: Path) -> Path:
    """The configured specs folder (``$EOS_SPECS_DIR``), else ``default``."""
    return configured_specs_directory() or Path(default).expanduser().resolve()


def discover_specs(directory: Path) -> dict[str, Path]:
    """``{pipeline name: spec file}`` for every spec file in ``directory``, sorted by name.

    A folder that does not exist holds no pipelines (a fresh deployment parses no DAG instead
    of failing); everything else is :func:`~airflow_provider_eos.core.spec.load_spec_files`.

    :raises SpecError: naming the file of an invalid spec, or both files of a duplicated name.
    """
    if not Path(directory).is_dir():
        return {}
    return dict(sorted((spec.name, path) for path, spec in load_spec_files(directory).items()))


def spec_path_lookup(specs: dict[str, Path], directory: Path) -> Callable[[str], str]:
    """A template macro: pipeline name -> spec file, with an error that lists the known pipelines."""

    def spec_path_of(name: str) -> str:
        if name not in specs:
            raise SpecError(f"pipeline {name!r} has no spec in {directory}; known: {sorted(specs)}",
                            fix=f"add a spec file named for it to {directory} (or set ${SPECS_DIR_ENV})")
        return str(specs[name])

    return spec_path_of
