"""``eos package``: build the job's packed Python environment for ``--archives`` (venv-pack).

Prints what it did, then ``environment=ARCHIVE`` on its own last line: the value for the spec's
``python_environment``, ``eos run --environment`` or the operator's ``python_environment``.
Building takes a minute or more, each step said on stderr as it starts and every 15 s while it
runs (:func:`~airflow_provider_eos.core.progress.heartbeat`); an archive built from the same
inputs is reused (``--force`` rebuilds). See :mod:`airflow_provider_eos.spark.job_environment`
for what is inside and why.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from airflow_provider_eos.cli.output import Report, add_json_flag

__all__ = ["register"]


def _package(args: argparse.Namespace) -> int:
    from airflow_provider_eos.spark.job_environment import EnvironmentRecipe, build_job_environment

    recipe = EnvironmentRecipe.current(
        python=args.python, constraints=Path(args.constraints) if args.constraints else None,
        extra_requirements=tuple(args.requirements), python_prefix=args.python_prefix,
    )
    report = Report(args)
    built = build_job_environment(Path(args.out), recipe, force=args.force)
    what = "reused (inputs unchanged)" if built.reused else f"built in {built.seconds:.0f} s"
    report.line(f"{built.archive} {what}; recipe {built.fingerprint[:12]}; Python {recipe.python_version}")
    report.line(f"environment={built.archive}")
    report.data.update(environment=str(built.archive), reused=built.reused, seconds=round(built.seconds, 1),
                       fingerprint=built.fingerprint, python_version=recipe.python_version)
    return report.finish()


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``package`` to the ``eos`` command line."""
    package = commands.add_parser(
        "package", help="build the job's Python environment as an archive for spark-submit --archives",
        description="Build the job's Python environment (this package, confluent-kafka, pyarrow, pandas ...; "
        "no Airflow, no PySpark) with venv-pack, pinned by the constraints file. Executors then run "
        "./environment/bin/python from the archive. Cluster nodes need the same Python at the same path "
        "(or at --python-prefix).",
    )
    package.add_argument("--out", required=True, help="the archive to write, e.g. /opt/eos/eos-job-env.tar.gz")
    package.add_argument("--python", default=None,
                         help="base interpreter of the environment (default: this one; same minor version)")
    package.add_argument("--constraints", default=None,
                         help="pip constraints file (default: the source tree's constraints-3.X.txt of this Python, "
                         "else the versions installed here)")
    package.add_argument("--with", dest="requirements", action="append", default=[], metavar="REQUIREMENT",
                         help="another requirement to install, e.g. your transforms' package (repeatable)")
    package.add_argument("--python-prefix", default=None,
                         help="where cluster nodes have the base Python, if not where it is here (e.g. /usr)")
    package.add_argument("--force", action="store_true", help="rebuild even if the inputs are unchanged")
    add_json_flag(package)
    package.set_defaults(handler=_package)
