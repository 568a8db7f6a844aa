"""The suite's own scheduling: recorded durations give the start order and each test's timeout."""

from __future__ import annotations

import json

import pytest

from tests.support import durations

REPORT = """
============================= slowest durations ==============================
409.95s call     tests/chaos/test_soak_subset.py::test_phase[driver]
26.81s setup    tests/chaos/test_soak_subset.py::test_phase[driver]
50.11s setup    tests/deployment/test_recovery_ui.py::test_verify
3.10s call     tests/deployment/test_airflow_cli.py::test_up_down
0.01s call     tests/unit/test_spec.py::test_names

(4591 durations < 0.005s hidden.  Use -vv to show these durations.)
1684 passed, 3 warnings in 3100.98s (0:51:40)
"""


def test_a_report_adds_up_setup_call_and_teardown_per_test() -> None:
    assert durations.from_pytest_report(REPORT) == {
        "tests/chaos/test_soak_subset.py::test_phase[driver]": 436.76,
        "tests/deployment/test_recovery_ui.py::test_verify": 50.11,
        "tests/deployment/test_airflow_cli.py::test_up_down": 3.1,
        "tests/unit/test_spec.py::test_names": 0.01,
    }


def test_timeouts_are_five_times_the_record_in_whole_minutes_never_below_the_default() -> None:
    assert durations.timeout_for(None) == durations.DEFAULT_TIMEOUT_S
    assert durations.timeout_for(0.01) == durations.DEFAULT_TIMEOUT_S
    assert durations.timeout_for(100) == 540
    assert durations.timeout_for(436.76) == 2220


def test_longest_groups_start_first_and_the_deployment_package_stays_together() -> None:
    recorded = durations.from_pytest_report(REPORT)
    nodeids = [
        "tests/deployment/test_airflow_cli.py::test_up_down",
        "tests/unit/test_spec.py::test_names",
        "tests/unit/test_spec.py::test_other",
        "tests/deployment/test_recovery_ui.py::test_verify",
        "tests/chaos/test_soak_subset.py::test_covers_every_kind",
        "tests/chaos/test_soak_subset.py::test_phase[driver]",
    ]
    keys = durations.start_order(nodeids, recorded)
    ordered = sorted(nodeids, key=keys.__getitem__)
    assert ordered == [
        # the module of the longest test, in pytest's order
        "tests/chaos/test_soak_subset.py::test_covers_every_kind",
        "tests/chaos/test_soak_subset.py::test_phase[driver]",
        # the deployment's modules together, the longest module first
        "tests/deployment/test_recovery_ui.py::test_verify",
        "tests/deployment/test_airflow_cli.py::test_up_down",
        "tests/unit/test_spec.py::test_names",
        "tests/unit/test_spec.py::test_other",
    ]


def test_the_committed_record_names_tests_that_exist() -> None:
    recorded = json.loads(durations.DURATIONS_FILE.read_text())
    repo = durations.DURATIONS_FILE.parents[1]
    missing = [nodeid for nodeid in recorded if not (repo / nodeid.split("::")[0]).exists()]
    assert recorded and not missing, missing


def test_a_run_replaces_the_records_of_the_tests_it_ran_and_the_others_keep_theirs(tmp_path) -> None:
    (tmp_path / "tests").mkdir()
    for module in ("test_long.py", "test_short.py"):
        (tmp_path / "tests" / module).write_text("")
    recorded = {"tests/test_long.py::test_proof": 300.0, "tests/test_short.py::test_a": 2.0,
                "tests/test_gone.py::test_b": 9.0}
    measured = {"tests/test_short.py::test_a": 3.5, "tests/test_short.py::test_new": 40.0,
                "tests/test_renamed_since.py::test_c": 7.0}  # a log of an older commit: its module is gone
    assert durations.merge(recorded, measured, tmp_path) == {
        "tests/test_long.py::test_proof": 300.0,  # a long proof `make test` does not run keeps its timeout
        "tests/test_short.py::test_a": 3.5,
        "tests/test_short.py::test_new": 40.0,
    }


def test_an_unrecorded_test_starts_as_its_modules_longest_a_new_module_as_a_mid_length_one_a_unit_one_last() -> None:
    recorded = {"tests/integration/test_old.py::test_a": 90.0, "tests/integration/test_quick.py::test_a": 5.0,
                "tests/integration/test_quick.py::test_b": 1.0,
                "tests/integration/test_renamed.py::test_killed": 45.0}
    nodeids = [
        "tests/unit/test_new_unit.py::test_a",
        "tests/integration/test_quick.py::test_a",
        "tests/integration/test_quick.py::test_new",
        "tests/integration/test_new.py::test_a",
        "tests/integration/test_renamed.py::test_killed[jvm]",  # parametrized since its record
        "tests/integration/test_old.py::test_a",
    ]
    keys = durations.start_order(nodeids, recorded)
    assert sorted(nodeids, key=keys.__getitem__) == [
        "tests/integration/test_old.py::test_a",
        "tests/integration/test_renamed.py::test_killed[jvm]",
        "tests/integration/test_new.py::test_a",
        "tests/integration/test_quick.py::test_a",
        "tests/integration/test_quick.py::test_new",
        "tests/unit/test_new_unit.py::test_a",
    ]
    assert durations.estimate("tests/integration/test_new.py::test_a", recorded) == durations.UNRECORDED_MODULE_S
    assert durations.estimate("tests/integration/test_quick.py::test_new", recorded) == 5.0
    assert durations.estimate("tests/unit/test_new_unit.py::test_a", recorded) == 0.0


@pytest.mark.parametrize(("package", "long_module", "short_module"), [
    ("tests/deployment_celery/", "test_cross_worker_pipeline.py", "test_worker_hosts.py"),
    ("tests/yarn/", "test_yarn_driver_writer.py", "test_hdfs_driver_lease.py"),
])
def test_the_modules_of_a_package_with_a_shared_service_start_together_as_one_group(
        package: str, long_module: str, short_module: str) -> None:
    recorded = {f"{package}{long_module}::test_long": 400.0,
                f"{package}{short_module}::test_short": 8.0,
                "tests/chaos/test_crash_points.py::test_crash": 200.0}
    nodeids = [f"{package}{short_module}::test_short",
               "tests/chaos/test_crash_points.py::test_crash",
               f"{package}{long_module}::test_long"]
    keys = durations.start_order(nodeids, recorded)
    assert durations.group_of(nodeids[0]) == durations.group_of(nodeids[2]) == package
    assert sorted(nodeids, key=keys.__getitem__) == [nodeids[2], nodeids[0], nodeids[1]]



def test_the_tests_that_hold_a_fixture_one_at_a_time_are_one_scope_the_others_each_their_own() -> None:
    scope = durations.scope_of
    assert scope("tests/deployment_celery/test_worker_hosts.py::test_two_hosts") == "celery-workers"
    assert scope("tests/deployment_celery/test_worker_killed.py::test_kill[x]") == "celery-workers"
    assert scope("tests/integration/test_silent_broker.py::test_verify") == "pausable-secured-kafka"
    assert scope("tests/integration/test_acl_probe_no_answer.py::test_probe") == "pausable-secured-kafka"
    alone = "tests/integration/test_expired_offsets.py::test_align[after_kafka_commit@1-written]"
    assert scope(alone) == alone


def test_every_module_that_takes_the_pausable_broker_is_in_its_scope() -> None:
    """A new test module pausing that broker, left out, would wait on the lock again."""
    import ast

    tests = durations.DURATIONS_FILE.parent
    taking = set()
    for path in tests.rglob("test_*.py"):
        tree = ast.parse(path.read_text())
        args = {arg.arg for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                for arg in node.args.args + node.args.kwonlyargs}
        if args & {"pausable_secured_kafka", "pausable_admin_settings"} and "unit" not in path.parts:
            taking.add(path.relative_to(tests.parent).as_posix())
    assert taking and all(durations.scope_of(f"{module}::t") == "pausable-secured-kafka" for module in taking), taking


def test_the_suite_schedules_by_these_scopes_in_the_recorded_order() -> None:
    """The Makefile's pytest: ``loadscope`` (which tests/conftest.py gives these scopes), not reordered by size."""
    makefile = (durations.DURATIONS_FILE.parents[1] / "Makefile").read_text()
    line = next(line for line in makefile.splitlines() if line.startswith("PYTEST :="))
    assert "--dist loadscope" in line and "--no-loadscope-reorder" in line, line
