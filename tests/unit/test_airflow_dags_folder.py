"""``eos airflow up``'s default DAG files: a checkout's ``dags/``, else the installed wheel's ``example_dags/``."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_eos.cli.main import build_parser
from airflow_provider_eos.devstack.airflow_deployment import PACKAGED_DAGS, REPO_DAGS, default_dags_folder

REPO = Path(__file__).resolve().parents[2]


def test_a_checkout_serves_its_own_dags_folder(tmp_path: Path) -> None:
    (tmp_path / "dags").mkdir()
    assert default_dags_folder(tmp_path / "dags", tmp_path / "pkg" / "example_dags") == tmp_path / "dags"


def test_an_installed_wheel_without_a_dags_folder_serves_its_example_dags(tmp_path: Path) -> None:
    # site-packages/dags does not exist: the wheel's copies are in the package.
    packaged = tmp_path / "pkg" / "example_dags"
    assert default_dags_folder(tmp_path / "dags", packaged) == packaged


def test_the_paths_are_where_a_checkout_and_a_wheel_put_them() -> None:
    assert REPO_DAGS == REPO / "dags"
    assert PACKAGED_DAGS == REPO / "airflow_provider_eos" / "example_dags"
    # setup.py's build step writes the wheel's copies under that name.
    assert 'package / "example_dags"' in (REPO / "setup.py").read_text()


def test_the_command_line_default_is_the_same_choice() -> None:
    args = build_parser().parse_args(["airflow", "up"])
    assert Path(args.dags_folder) == default_dags_folder() == REPO_DAGS
