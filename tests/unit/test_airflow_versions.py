"""The Airflow matrix (`make compat-airflow`): it tests the floors setup.cfg claims, through files that pin them."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

from tools.compat import replace_section
from tools.compat_airflow import AIRFLOWS, CAPABILITIES, from_table, table

REPO = Path(__file__).resolve().parents[2]


def _claimed() -> dict[str, Requirement]:
    """Every requirement setup.cfg declares (install_requires and the extras), by name."""
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    lines = config["options"]["install_requires"].splitlines()
    lines += [line for extra in config["options.extras_require"].values() for line in extra.splitlines()]
    requirements = [Requirement(line) for line in lines if line.strip() and not line.strip().startswith("#")]
    return {r.name: r for r in requirements}


def _floor(requirement: Requirement) -> Version:
    (floor,) = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
    return floor


def _pins(airflow) -> dict[str, str]:
    pins = {"apache-airflow": airflow.airflow}
    pins.update({f"apache-airflow-providers-{name}": version for name, version in airflow.providers.items()})
    return pins


def test_the_lowest_set_is_every_floor_setup_cfg_claims_and_the_newest_is_inside_the_ranges() -> None:
    claimed = _claimed()
    lowest, newest = AIRFLOWS[0], AIRFLOWS[-1]
    for name, version in _pins(lowest).items():
        assert Version(version) == _floor(claimed[name]), name
    for name, version in _pins(newest).items():
        assert claimed[name].specifier.contains(version), name
    assert Version(lowest.airflow) < Version(newest.airflow)


def test_each_constraints_file_pins_its_airflow_and_providers() -> None:
    for airflow in AIRFLOWS:
        text = airflow.constraints.read_text()
        for name, version in _pins(airflow).items():
            assert re.search(rf"^{re.escape(name)}=={re.escape(version)}$", text, re.MULTILINE), (airflow.airflow, name)


def test_every_capability_names_tests_that_exist() -> None:
    for capability in CAPABILITIES:
        for path in capability.args:
            assert (REPO / path).exists(), (capability.name, path)


def test_a_section_is_replaced_in_place_and_the_other_kept() -> None:
    page = replace_section("", "kafka", "## Kafka\nold")
    page = replace_section(page, "airflow", "## Airflow\nfirst")
    page = replace_section(page, "kafka", "## Kafka\nnew")
    assert page.index("## Kafka\nnew") < page.index("## Airflow\nfirst") and "old" not in page
    assert replace_section(page, "airflow", "## Airflow\nfirst") == page


def test_the_table_gives_back_its_results_so_a_fresh_checkout_keeps_the_rows_it_does_not_run() -> None:
    lowest, newest = AIRFLOWS[0], AIRFLOWS[-1]
    results = {
        lowest.airflow: {"install": {"status": "pass", "seconds": 7, "tests": 0, "failed": []},
                         CAPABILITIES[0].name: {"status": "pass", "seconds": 44, "tests": 12, "failed": []},
                         CAPABILITIES[-1].name: {"status": "fail", "seconds": 113, "tests": 1,
                                                 "failed": ["tests/x.py::test_y"]}},
        newest.airflow: {CAPABILITIES[1].name: {"status": "skip", "seconds": 0, "tests": 3, "failed": []},
                         CAPABILITIES[2].name: {"status": "not run", "seconds": 0, "tests": 0, "failed": []}},
    }
    page = replace_section("# Compatibility\n", "airflow", table(results, "2026-11-28"))
    assert from_table(page, lowest) == {
        "install": results[lowest.airflow]["install"],
        CAPABILITIES[0].name: results[lowest.airflow][CAPABILITIES[0].name],
        CAPABILITIES[-1].name: {"status": "fail", "seconds": 113, "tests": 1, "failed": []},  # the ids are not in it
    }
    assert from_table(page, newest) == {CAPABILITIES[1].name: results[newest.airflow][CAPABILITIES[1].name]}
    assert from_table("# Compatibility\n", lowest) == {}


def test_only_the_streaming_deployment_row_runs_its_long_test(tmp_path: Path) -> None:
    """What each row's pytest command collects (the real pytest, setup.cfg's `-m "not long"` included)."""
    import subprocess
    import sys

    from tools.compat_airflow import pytest_command

    def collected(capability) -> list[str]:
        command = [*pytest_command(Path(sys.executable), capability, "0", tmp_path / "junit.xml"), "--collect-only"]
        listing = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
        assert listing.returncode == 0, listing.stdout[-3000:] + listing.stderr[-3000:]
        return [line for line in listing.stdout.splitlines() if "::" in line]

    (streaming,) = [c for c in CAPABILITIES if "tests/deployment/test_streaming_pipeline.py" in c.args]
    assert collected(streaming) == [
        "tests/deployment/test_streaming_pipeline.py::test_streaming_run_sigkill_clear_and_mark_failed_stay_exactly_once"]
    assert [c.name for c in CAPABILITIES if c.long] == [streaming.name]
    (recovery_ui,) = [c for c in CAPABILITIES if "tests/deployment/test_recovery_ui.py" in c.args]
    assert collected(recovery_ui) == [
        "tests/deployment/test_recovery_ui.py::test_a_wrong_confirmation_is_refused_in_the_ui_and_the_right_one_runs"]
