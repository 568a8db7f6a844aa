"""Reading a folder of spec files: which files count as specs, and the one scanner of a specs folder.

The DAGs (through :mod:`airflow_provider_eos.spec_registry`), ``eos preflight`` and the
pre-flight's sharing rules all read a folder through :func:`load_spec_files`, so they agree on
which pipelines exist.
"""

from __future__ import annotations

from pathlib import Path

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.spec.document import SPEC_SUFFIXES
from airflow_provider_eos.core.spec.model import PipelineSpec

__all__ = ["is_spec_file_name", "load_spec_files", "load_specs"]


def is_spec_file_name(name: str) -> bool:
    """Whether a file called ``name`` in a specs folder is read as a pipeline spec.

    Only ``.yaml``, ``.yml`` and ``.json`` files; hidden files (``.orders.yaml``, vim's swap
    files) and editor leftovers (emacs's ``#orders.yaml#`` and ``orders.yaml~``) are not,
    because a stale copy of a spec would otherwise count as a second pipeline.
    """
    if name.startswith((".", "#")) or name.endswith(("~", "#")):
        return False
    return Path(name).suffix.lower() in SPEC_SUFFIXES


def load_spec_files(directory: str | Path) -> dict[Path, PipelineSpec]:
    """The one scanner of a specs folder: ``{spec file: spec}`` for every spec file, sorted by file name.

    Files :func:`is_spec_file_name` rejects are skipped; subdirectories are not searched. The DAGs
    (through :mod:`airflow_provider_eos.spec_registry`), ``eos preflight`` and the pre-flight's
    sharing rules all read a folder through this function.

    :raises SpecError: if the folder does not exist, naming the file of the first invalid spec,
        or both files of a duplicated pipeline name.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise SpecError(
            f"spec directory {str(folder)!r} does not exist or is not a directory",
            fix="point to the folder holding the pipeline spec files",
        )
    specs: dict[Path, PipelineSpec] = {}
    seen: dict[str, Path] = {}
    for file in sorted(folder.iterdir()):
        if not is_spec_file_name(file.name) or not file.is_file():
            continue
        spec = PipelineSpec.load(file)
        if spec.name in seen:
            raise SpecError(
                f"pipeline name {spec.name!r} is used by both {str(seen[spec.name])!r} and {str(file)!r}",
                fix="give every pipeline a unique name (DAG ids derive from it)",
            )
        seen[spec.name] = file
        specs[file] = spec
    return specs


def load_specs(directory: str | Path) -> list[PipelineSpec]:
    """Every spec in ``directory``, sorted by file name (see :func:`load_spec_files`).

    :raises SpecError: as :func:`load_spec_files`.
    """
    return list(load_spec_files(directory).values())
