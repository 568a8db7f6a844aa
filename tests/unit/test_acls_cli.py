"""``eos acls``: parsing, the printed set, typed errors for bad input, and --apply with the admin's settings only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.cli.main import build_parser, main
from airflow_provider_eos.core.acls import Acl, AclError, required_acls
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka import acls_admin
from airflow_provider_eos.usecases.acls import acls

SPEC = {
    "name": "orders",
    "kafka": {"bootstrap.servers": "job-broker:9093", "security.protocol": "SASL_SSL",
              "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "orders-job", "sasl.password": "job-secret"},
    "input_topics": ["orders-in"],
    "output_topic": "orders-out",
    "group_id": "orders-sink",
    "transactional_id_prefix": "orders-eos",
    "checkpoint_location": "/tmp/checkpoints/orders",
}
ADMIN = {"bootstrap.servers": "admin-broker:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
         "sasl.username": "admin", "sasl.password": "admin-secret"}


@pytest.fixture
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "orders.json"
    path.write_text(json.dumps(SPEC))
    return path


@pytest.fixture
def admin_file(tmp_path: Path) -> Path:
    path = tmp_path / "client.config"
    path.write_text(json.dumps(ADMIN))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_parser_takes_the_documented_options() -> None:
    args = build_parser().parse_args(["acls", "--spec", "s.yaml", "--principal", "User:x", "--role", "health",
                                      "--apply", "--admin-config", "a.json", "--json"])
    assert (args.spec, args.principal, args.role, args.apply, args.admin_config, args.json) == (
        "s.yaml", "User:x", "health", True, "a.json", True)


def test_it_prints_the_set_as_a_table(capsys: pytest.CaptureFixture[str], spec_file: Path) -> None:
    code, out, _ = run(capsys, "acls", "--spec", str(spec_file), "--principal", "User:orders-job", "--role", "job")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("11 ACL(s) for User:orders-job as job of pipeline 'orders' (printed only")
    assert lines[2].split() == ["resource", "type", "pattern", "name", "operation", "why"]
    table = [line for line in lines if line.startswith(("TOPIC", "GROUP", "TRANSACTIONAL_ID", "CLUSTER"))]
    assert table[-1].split()[:4] == ["TRANSACTIONAL_ID", "PREFIXED", "orders-eos-", "WRITE"]
    assert "job-secret" not in out


def test_json_is_the_set_with_each_reason(capsys: pytest.CaptureFixture[str], spec_file: Path) -> None:
    code, out, _ = run(capsys, "acls", "--spec", str(spec_file), "--principal", "User:orders-job", "--role",
                       "health", "--json")
    data = json.loads(out)
    assert code == 0 and data["outcome"] == "ok" and data["role"] == "health" and data["applied"] is False
    expected = required_acls(PipelineSpec.from_dict(SPEC), "User:orders-job", "health")
    assert [Acl.model_validate(a) for a in data["acls"]] == expected


def test_broker_configs_adds_the_clusters_describe_configs_to_health(
        capsys: pytest.CaptureFixture[str], spec_file: Path) -> None:
    code, out, _ = run(capsys, "acls", "--spec", str(spec_file), "--principal", "User:orders-health", "--role",
                       "health", "--broker-configs", "--json")
    data = json.loads(out)
    assert code == 0 and data["outcome"] == "ok"
    expected = required_acls(PipelineSpec.from_dict(SPEC), "User:orders-health", "health", broker_configs=True)
    assert [Acl.model_validate(a) for a in data["acls"]] == expected
    assert (expected[0].resource_type.value, expected[0].operation.value) == ("CLUSTER", "DESCRIBE_CONFIGS")


@pytest.mark.parametrize(("extra", "words"), [
    (["--principal", "User:orders-job", "--role", "job", "--broker-configs"],
     ["not of 'job'", "--broker-configs only with --role health"]),
    (["--principal", "User:orders-job", "--role", "recovery", "--broker-configs"],
     ["not of 'recovery'", "--broker-configs only with --role health"]),
    (["--principal", "orders-job", "--role", "job"], ["'orders-job'", "User:NAME"]),
    (["--principal", "User:orders-job", "--role", "admin"], ["'admin'", "job, recovery, health"]),
    (["--principal", "User:*", "--role", "recovery", "--apply", "--admin-config", "x.json"],
     ["'User:*'", "wildcard", "every authenticated user"]),
    (["--principal", "User:orders-job", "--role", "job", "--apply"], ["--apply", "--admin-config FILE"]),
    (["--principal", "User:orders-job", "--role", "job", "--admin-config", "x.json"], ["without --apply"]),
])
def test_bad_input_is_a_typed_error_naming_the_value_and_the_fix(
        capsys: pytest.CaptureFixture[str], spec_file: Path, extra: list[str], words: list[str]) -> None:
    code, out, _ = run(capsys, "acls", "--spec", str(spec_file), *extra, "--json")
    error = json.loads(out)
    assert code == 2 and error["error"] == "AclError" and error["fix"]
    for word in words:
        assert word in error["message"] + error["fix"], error


@pytest.mark.parametrize(("content", "words"), [
    (None, "does not exist"),
    ('{"bootstrap.servers": "b:1", "sasl.password": "admin-secret"', "is not JSON (line 1"),
    ('["bootstrap.servers"]', "is not a JSON object with 'bootstrap.servers'"),
    ('{"security.protocol": "SASL_SSL"}', "is not a JSON object with 'bootstrap.servers'"),
])
def test_a_bad_admin_config_names_the_file(capsys: pytest.CaptureFixture[str], spec_file: Path, tmp_path: Path,
                                           content: str | None, words: str) -> None:
    path = tmp_path / "admin.json"
    if content is not None:
        path.write_text(content)
    code, _, err = run(capsys, "acls", "--spec", str(spec_file), "--principal", "User:orders-job", "--role", "job",
                       "--apply", "--admin-config", str(path))
    assert code == 2 and str(path) in err and words in err and "client.config" in err
    assert "admin-secret" not in err


def test_a_missing_spec_is_a_spec_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "acls", "--spec", str(tmp_path / "nope.yaml"), "--principal", "User:x", "--role", "job")
    assert code == 2 and "nope.yaml" in err


def test_apply_authenticates_with_the_admin_config_never_the_spec(
        monkeypatch: pytest.MonkeyPatch, spec_file: Path, admin_file: Path) -> None:
    seen: dict[str, Any] = {}

    def fake_admin(settings: dict[str, Any], **_: Any) -> object:
        seen["settings"] = settings
        return "admin-client"

    def fake_apply(admin: object, wanted: list[Acl], *, timeout_s: float) -> tuple[list[Acl], list[Acl]]:
        seen["admin"] = admin
        return wanted[:1], wanted[1:]

    monkeypatch.setattr(acls_admin, "acl_admin", fake_admin)
    monkeypatch.setattr(acls_admin, "apply_acls", fake_apply)
    result = acls(PipelineSpec.load(spec_file), "User:orders-job", "job", admin_config=admin_file, apply=True)
    assert seen == {"settings": ADMIN, "admin": "admin-client"}
    assert result.ok and result.report.applied and len(result.report.created) == 1
    assert "applied, 1 created, 10 already present" in result.summary


def test_bindings_round_trip_through_confluent_kafka() -> None:
    for acl in required_acls(PipelineSpec.from_dict(SPEC), "User:orders-job", "recovery"):
        back = acls_admin.from_binding(acls_admin.to_binding(acl))
        assert back is not None and back.binding == acl.binding


def test_load_admin_settings_returns_the_object(admin_file: Path) -> None:
    assert acls_admin.load_admin_settings(admin_file) == ADMIN
    with pytest.raises(AclError):
        acls_admin.load_admin_settings(admin_file.parent)


def write_nested_specs(folder: Path) -> Path:
    """Pipelines ``orders`` (prefix ``orders``) and ``orders_eu`` (prefix ``orders-eu``) in ``folder``."""
    folder.mkdir()
    (folder / "orders.json").write_text(json.dumps({**SPEC, "transactional_id_prefix": "orders"}))
    (folder / "orders_eu.json").write_text(json.dumps({
        **SPEC, "name": "orders_eu", "input_topics": ["orders-eu-in"], "output_topic": "orders-eu-out",
        "group_id": "orders-eu-sink", "transactional_id_prefix": "orders-eu",
        "checkpoint_location": "/tmp/checkpoints/orders_eu",
    }))
    return folder / "orders.json"


def test_a_prefix_whose_acl_covers_another_pipelines_ids_is_a_finding_and_is_not_applied(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, admin_file: Path) -> None:
    spec = write_nested_specs(tmp_path / "specs")
    args = ("acls", "--spec", str(spec), "--principal", "User:orders-job", "--role", "job")

    code, out, _ = run(capsys, *args, "--specs-dir", str(spec.parent))
    assert code == 1, out
    assert "PREFIXED 'orders-' also covers the transactional ids of pipeline(s) orders_eu" in out
    code, out, _ = run(capsys, *args, "--specs-dir", str(spec.parent), "--json")
    data = json.loads(out)
    assert code == 1 and data["outcome"] == "finding"
    assert len(data["warnings"]) == 1 and "orders_eu" in data["warnings"][0]
    # $EOS_SPECS_DIR is the folder read without --specs-dir, as for eos preflight.
    monkeypatch.setenv("EOS_SPECS_DIR", str(spec.parent))
    assert run(capsys, *args)[0] == 1

    def never(*_: object, **__: object) -> object:
        raise AssertionError("nothing may be applied")

    monkeypatch.setattr(acls_admin, "acl_admin", never)
    code, out, _ = run(capsys, *args, "--apply", "--admin-config", str(admin_file), "--json")
    error = json.loads(out)
    assert code == 2 and error["error"] == "AclError" and "orders_eu" in error["message"], error
    assert "transactional_id_prefix" in error["fix"]


def test_without_a_specs_folder_the_other_pipelines_are_not_checked(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, spec_file: Path) -> None:
    monkeypatch.delenv("EOS_SPECS_DIR", raising=False)
    code, out, _ = run(capsys, "acls", "--spec", str(spec_file), "--principal", "User:orders-job", "--role", "job")
    assert code == 0 and "other pipelines were not checked" in out
