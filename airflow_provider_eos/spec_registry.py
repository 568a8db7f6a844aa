"""Where the pipelines are found: one folder of spec files, configured once, for the DAGs and ``eos``.

``$EOS_SPECS_DIR`` if set; else the DAGs use ``pipelines/`` next to the DAG files, and ``eos
preflight`` its ``--specs-dir`` (without either, the sharing rules are "not checked"). The folder
is read by the one scanner, :func:`~airflow_provider_eos.core.spec.scan_spec_folder`: hidden files
and editor leftovers are skipped and a pipeline name used by two files is refused in both.
Parsing a spec is a YAML read and a pydantic validation: cheap enough for DAG parse time.

An invalid spec file takes only itself out: the DAGs import every healthy pipeline (its runs,
its entry in the forms, its recovery) and name each invalid file with its problem (never a
value, :mod:`airflow_provider_eos.core.spec.validation_errors`) in the DAG processor's log, in
the DAGs' docs, and as the import error of ``dags/eos_spec_errors.py``, a DAG file of its own
so that Airflow's "DAG Import Errors" list (where Airflow users look for a broken DAG
definition, and what monitoring of import errors watches) shows it without removing any DAG.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from airflow_provider_eos.configuration import setting
from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.spec import scan_spec_folder

__all__ = [
    "SPECS_DIR_ENV",
    "DiscoveredSpecs",
    "configured_specs_directory",
    "discover",
    "discover_specs",
    "spec_path_lookup",
    "specs_directory",
]

SPECS_DIR_ENV = "EOS_SPECS_DIR"
# One invalid file's problem in the DAG docs and the import error: enough to act on, never a page.
_MAX_REASON_CHARS = 600

log = logging.getLogger(__name__)


class DiscoveredSpecs(BaseModel):
    """The pipelines of a specs folder, and the spec files that are not usable, with why.

    :param directory: the specs folder.
    :param specs: ``{pipeline name: spec file}`` of the healthy specs, sorted by name.
    :param invalid: ``{file name: problem}`` of the invalid spec files (one line each, no value), by file name.
    """

    model_config = ConfigDict(frozen=True)

    directory: Path
    specs: dict[str, Path] = {}
    invalid: dict[str, str] = {}

    def invalid_md(self) -> str:
        """Markdown for the DAGs' docs listing the invalid spec files; empty when there are none."""
        if not self.invalid:
            return ""
        # A backtick in a reason would open a code span in the docs' markdown.
        lines = "\n".join(f"- `{name}`: {reason.replace('`', chr(39))}" for name, reason in self.invalid.items())
        return (
            f"\n\n**Invalid spec files** in `{self.directory}` (skipped: their pipelines have no runs, form "
            f"entries or recovery here until fixed; the other pipelines are unaffected):\n{lines}\n"
        )

    def raise_if_invalid(self) -> None:
        """Fail (the import error of ``dags/eos_spec_errors.py``) naming each invalid spec file.

        :raises SpecError: if any spec file is invalid.
        """
        if self.invalid:
            listed = "\n".join(f"  - {name}: {reason}" for name, reason in self.invalid.items())
            raise SpecError(
                f"{len(self.invalid)} invalid spec file(s) in {str(self.directory)!r}, skipped by the eos DAGs "
                f"(the other pipelines keep their DAGs):\n{listed}",
                fix="correct each file as its line says (or move it out of the folder); the DAGs pick it up "
                "at the next parse",
            )


def configured_specs_directory() -> Path | None:
    """The folder ``$EOS_SPECS_DIR`` (else Airflow's ``[eos] specs_dir``) names, or ``None`` when neither is set."""
    value = setting("specs_dir")
    return Path(value).expanduser().resolve() if value else None


def specs_directory(default: Path) -> Path:
    """The configured specs folder (``$EOS_SPECS_DIR`` or ``[eos] specs_dir``), else ``default``."""
    return configured_specs_directory() or Path(default).expanduser().resolve()


def _one_line(err: SpecError) -> str:
    """The error as one line: its listed problems joined with ``;``, then the fix; bounded."""
    first, *problems = (line.strip().removeprefix("- ") for line in err.message.splitlines() if line.strip())
    text = " ".join([first, "; ".join(problems), f"Fix: {err.fix}" if err.fix else ""]).strip()
    text = " ".join(text.split())
    return text if len(text) <= _MAX_REASON_CHARS else text[: _MAX_REASON_CHARS - 3] + "..."


def discover(directory: Path) -> DiscoveredSpecs:
    """The healthy pipelines of ``directory`` and its invalid spec files, each logged as an error.

    A folder that does not exist holds no pipelines (a fresh deployment parses no DAG instead of failing).
    """
    folder = Path(directory)
    if not folder.is_dir():
        return DiscoveredSpecs(directory=folder)
    scanned = scan_spec_folder(folder)
    invalid = {file.name: _one_line(err) for file, err in scanned.invalid.items()}
    for name, reason in invalid.items():
        log.error("Skipping invalid pipeline spec file %s in %s: %s", name, folder, reason)
    specs = dict(sorted((spec.name, path) for path, spec in scanned.specs.items()))
    return DiscoveredSpecs(directory=folder, specs=specs, invalid=invalid)


def discover_specs(directory: Path) -> dict[str, Path]:
    """``{pipeline name: spec file}`` of every healthy spec file in ``directory``, by name (:func:`discover`)."""
    return discover(directory).specs


def spec_path_lookup(specs: dict[str, Path], directory: Path) -> Callable[[str], str]:
    """A template macro: pipeline name -> spec file, with an error that lists the known pipelines."""

    def spec_path_of(name: str) -> str:
        if name not in specs:
            raise SpecError(f"pipeline {name!r} has no valid spec in {directory}; known: {sorted(specs)}",
                            fix=f"add a spec file named for it to {directory} (or set ${SPECS_DIR_ENV}); "
                            "an invalid spec file is named in the DAG's docs and in the DAG import errors")
        return str(specs[name])

    return spec_path_of
