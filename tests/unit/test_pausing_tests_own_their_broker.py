"""A test that pauses, stops or kills a single broker does it to a broker no other test is using at that moment.

The single brokers (``kafka_broker``, ``secured_kafka``) are shared by both xdist workers: a SIGSTOP there
stalls whatever the other worker runs on them. CI failed on it twice in one run (a silent-broker test's
deadline measured across the other worker's pause, and the verify test paused under pre-flight's). The
pausing tests take ``pausable_secured_kafka`` (their own broker, one test at a time) or a cluster of their
own (``kafka_cluster``, one per worker).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
SHARED_BROKERS = {"kafka_broker", "secured_kafka", "secured_admin_settings", "bootstrap"}
FAULTS = {"pause", "stop", "kill", "restart"}


def _fault_calls(tree: ast.AST) -> list[int]:
    """Lines of ``<something>.fault("pause" | "stop" | ..., node)``."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "fault"
            and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in FAULTS]


def _requested_fixtures(tree: ast.AST) -> set[str]:
    """Every argument name of the module's functions (its tests' and fixtures' requests), less the fixtures
    the module defines itself (test_silent_broker.py's ``bootstrap`` is its pausable broker's)."""
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    own = {node.name for node in functions if any("fixture" in ast.unparse(d) for d in node.decorator_list)}
    return {arg.arg for node in functions for arg in node.args.args + node.args.kwonlyargs} - own


def _pausing_modules() -> dict[Path, list[int]]:
    found = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        if "unit" in path.relative_to(TESTS).parts:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        if lines := _fault_calls(tree):
            found[path] = lines
    return found


def test_the_scan_finds_the_pausing_tests() -> None:
    found = {path.name for path in _pausing_modules()}
    assert {"test_silent_broker.py", "test_acl_probe_no_answer.py", "test_devstack_cluster.py"} <= found, found


def test_no_test_that_pauses_a_broker_requests_a_shared_one() -> None:
    offenders = {}
    for path, lines in _pausing_modules().items():
        shared = _requested_fixtures(ast.parse(path.read_text())) & SHARED_BROKERS
        if shared:
            offenders[str(path.relative_to(TESTS))] = (sorted(shared), lines)
    assert not offenders, (
        f"these modules fault a broker and request a shared one: {offenders}. Fix: take pausable_secured_kafka "
        "and pausable_admin_settings (tests/conftest.py), or a broker of the module's own")


def test_the_guard_sees_a_shared_broker_paused() -> None:
    module = ast.parse(
        "def test_x(secured_kafka):\n"
        "    LocalKafka(secured_kafka.state_dir).fault('pause', 1)\n")
    assert _fault_calls(module) == [2]
    assert _requested_fixtures(module) & SHARED_BROKERS == {"secured_kafka"}
    own = ast.parse("@pytest.fixture\ndef bootstrap(pausable_admin_settings):\n    ...\n"
                    "def test_y(bootstrap):\n    ...\n")
    assert _requested_fixtures(own) == {"pausable_admin_settings"}
