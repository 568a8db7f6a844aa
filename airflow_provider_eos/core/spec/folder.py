"""Reading a folder of spec files: which files count as specs, and the one scanner of a specs folder.

Every reader goes through :func:`scan_spec_folder`, so they agree on which pipelines exist: the
DAGs (through :mod:`airflow_provider_eos.spec_registry`) skip an invalid file and name it; ``eos
preflight`` and the pre-flight's sharing rules read strictly (:func:`load_spec_files`).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.spec.document import SPEC_SUFFIXES
from airflow_provider_eos.core.spec.pipeline_spec import PipelineSpec

__all__ = ["SpecFolder", "is_spec_file_name", "load_spec_files", "load_specs", "scan_spec_folder"]


def is_spec_file_name(name: str) -> bool:
    """Whether a file called ``name`` in a specs folder is read as a pipeline spec.

    Only ``.yaml``, ``.yml`` and ``.json`` files; hidden files (``.orders.yaml``, vim's swap
    files) and editor leftovers (emacs's ``#orders.yaml#`` and ``orders.yaml~``) are not,
    because a stale copy of a spec would otherwise count as a second pipeline.
    """
    if name.startswith((".", "#")) or name.endswith(("~", "#")):
        return False
    return Path(name).suffix.lower() in SPEC_SUFFIXES


class SpecFolder(BaseModel):
    """What a specs folder holds: the valid specs by file, and every other spec file with why it is not.

    :param specs: ``{spec file: spec}`` of the valid specs whose pipeline name no other file uses, by file name.
    :param invalid: ``{spec file: error}`` of the files that are invalid or share a pipeline name, by file name.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    specs: dict[Path, PipelineSpec] = {}
    invalid: dict[Path, SpecError] = {}


def _listed(files: list[Path]) -> str:
    names = [repr(str(file)) for file in files]
    return f"both {names[0]} and {names[1]}" if len(names) == 2 else f"each of {', '.join(names)}"


def scan_spec_folder(directory: str | Path) -> SpecFolder:
    """Read every spec file of ``directory``, keeping the valid ones and the error of each other one.

    A file that is invalid does not hide the others. A pipeline name used by two files is refused
    in both: which of them is the pipeline cannot be told, and DAG ids derive from the name.

    :raises SpecError: if the folder does not exist.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise SpecError(
            f"spec directory {str(folder)!r} does not exist or is not a directory",
            fix="point to the folder holding the pipeline spec files",
        )
    specs: dict[Path, PipelineSpec] = {}
    invalid: dict[Path, SpecError] = {}
    files_of: dict[str, list[Path]] = {}
    for file in sorted(folder.iterdir()):
        if not is_spec_file_name(file.name) or not file.is_file():
            continue
        try:
            specs[file] = PipelineSpec.load(file)
        except SpecError as err:
            invalid[file] = err
            continue
        files_of.setdefault(specs[file].name, []).append(file)
    for name, files in files_of.items():
        if len(files) > 1:
            shared = SpecError(
                f"pipeline name {name!r} is used by {_listed(files)}",
                fix="give every pipeline a unique name (DAG ids derive from it)",
            )
            for file in files:
                del specs[file]
                invalid[file] = shared
    return SpecFolder(specs=specs, invalid=dict(sorted(invalid.items())))


def load_spec_files(directory: str | Path) -> dict[Path, PipelineSpec]:
    """The strict reading of a specs folder: ``{spec file: spec}`` for every spec file, sorted by file name.

    Files :func:`is_spec_file_name` rejects are skipped; subdirectories are not searched. ``eos
    preflight`` and the pre-flight's sharing rules read a folder through this function; the DAGs
    read it through :func:`scan_spec_folder` (via :mod:`airflow_provider_eos.spec_registry`),
    which skips an invalid file instead of failing.

    :raises SpecError: if the folder does not exist, naming the file of the first invalid spec,
        or both files of a duplicated pipeline name.
    """
    scanned = scan_spec_folder(directory)
    if scanned.invalid:
        raise next(iter(scanned.invalid.values()))
    return dict(scanned.specs)


def load_specs(directory: str | Path) -> list[PipelineSpec]:
    """Every spec in ``directory``, sorted by file name (see :func:`load_spec_files`).

    :raises SpecError: as :func:`load_spec_files`.
    """
    return list(load_spec_files(directory).values())
