"""``eos`` on a secured pipeline never prints a password: not in its output, its logs or its errors.

Every command a user or an operator runs against a spec whose ``kafka`` settings hold a SASL
password, in table and JSON form: as the recovery principal (with its ACLs) on a pipeline with a
real checkpoint (batches 0..3 committed, the sink group at batch 3 without its marker) and a
transaction left open under ``<prefix>-0``, so every command gets past the checkpoint read to
its Kafka requests; with a wrong password (the login's error path); and with a malformed spec
(a YAML error on the ``sasl.password`` line, a mistyped password: the spec's error path). The
pipeline DAG's own checks (task logs, XCom, rendered fields, command lines, the Spark event log,
files) are in ``tests/dags/test_secured_pipeline.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.devstack.security import add_scram_user
from airflow_provider_eos.kafka.group_offsets import write_committed_offsets
from tests.support.checkpointed_pipeline import LAST_COMMITTED, CheckpointedPipeline, checkpointed_pipeline
from tests.support.kafka import create_topic
from tests.support.secret_leaks import assert_absent

pytestmark = [pytest.mark.integration]

CONNECTION_SETTINGS = ("bootstrap.servers", "security.protocol", "sasl.mechanism", "ssl.ca.location")


def _eos(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "airflow_provider_eos.cli", *args], capture_output=True, text=True,
                          timeout=180, check=False)


def _spec_text(pipeline: CheckpointedPipeline, admin: dict[str, Any], user: str, password: str) -> str:
    settings = {**{k: admin[k] for k in CONNECTION_SETTINGS if k in admin}, "sasl.username": user,
                "sasl.password": password}
    return yaml.safe_dump(pipeline.spec.with_overrides(kafka=settings).to_dict())


def _write(path: Path, text: str) -> Path:
    path.touch(mode=0o600)
    path.write_text(text)
    return path


def _password_line_replaced(text: str, password: str, line: str) -> str:
    """``text`` with its ``sasl.password`` line replaced by ``line`` (``{password}`` in it is filled in)."""
    lines = text.splitlines()
    (index,) = [i for i, found in enumerate(lines) if found.strip().startswith("sasl.password:")]
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
    lines[index] = indent + line.format(password=password)
    return "\n".join(lines) + "\n"


@pytest.fixture
def pipeline(secured_admin_settings: dict[str, Any], tmp_path: Path) -> Iterator[CheckpointedPipeline]:
    """A checkpoint with batches 0..3 committed, their input, the group at batch 3 without its marker."""
    admin = dict(secured_admin_settings)

    def topic_factory(stem: str, partitions: int = 1, config: dict | None = None) -> str:
        return create_topic(admin, f"{stem}-{uuid.uuid4().hex[:10]}", partitions, config)

    made = checkpointed_pipeline(admin, topic_factory, tmp_path, stem="leaks")
    made.produce_input_of(LAST_COMMITTED)
    # The offsets as a tool's reset leaves them (no marker): verify finds NO_MARKER, align has a plan.
    write_committed_offsets(AdminClient(admin), made.group_id,
                            {tp: (end, "") for tp, end in made.end_offsets(LAST_COMMITTED).items()})
    yield made
    AdminClient(admin).delete_topics([made.input_topic, made.output_topic])


def test_eos_commands_never_print_the_password(secured_kafka, secured_admin_settings, pipeline, tmp_path):
    admin = dict(secured_admin_settings)
    user = f"eos-recovery-{uuid.uuid4().hex[:6]}"
    password = add_scram_user(admin, user)
    good_text = _spec_text(pipeline, admin, user, password)
    spec = _write(tmp_path / "recovery.yaml", good_text)
    granted = _eos("acls", "--spec", str(spec), "--principal", f"User:{user}", "--role", "recovery", "--apply",
                   "--admin-config", str(secured_kafka.client_config))
    assert granted.returncode == 0, granted.stderr
    wrong = f"wrong-{uuid.uuid4().hex}"
    bad_spec = _write(tmp_path / "wrong.yaml", _spec_text(pipeline, admin, user, wrong))
    malformed = {
        # A second ':' on the line: YAML's own message would quote the line.
        "yaml error": _write(tmp_path / "yaml-error.yaml",
                             _password_line_replaced(good_text, password, "sasl.password: {password}: oops")),
        # A list where a string belongs: a validation error would show the value.
        "mistyped": _write(tmp_path / "mistyped.yaml",
                           _password_line_replaced(good_text, password, "sasl.password: [{password}]")),
    }
    # A dead job's transaction, open under the driver writer's id: a real abort would fence it.
    lingering = Producer({**admin, "transactional.id": pipeline.spec.transactional_id(0),
                          "transaction.timeout.ms": 600_000})
    lingering.init_transactions(30)
    lingering.begin_transaction()
    lingering.produce(pipeline.output_topic, b"never aborted")
    assert lingering.flush(30) == 0

    commands: dict[str, tuple[str, ...]] = {
        "verify": ("verify", "--spec", str(spec)),
        # --force: nothing but --dry-run stands between the scan and the fence.
        "abort dry run": ("abort", "--spec", str(spec), "--dry-run", "--force"),
        "rewind plan": ("repair", "rewind", "--spec", str(spec), "--to-batch", "2"),
        "rewind by verdict": ("repair", "rewind", "--spec", str(spec)),
        "align dry run": ("repair", "align", "--spec", str(spec)),
        "health": ("health", "--spec", str(spec), "--samples", "1"),
        "preflight": ("preflight", "--spec", str(spec)),
    }
    outputs: dict[str, str] = {}
    done: dict[str, subprocess.CompletedProcess] = {}
    for name, args in commands.items():
        for form in ((), ("--json",)):
            done[f"{name}{' json' if form else ''}"] = ran = _eos(*args, *form)
            outputs[f"{name}{' json' if form else ''}"] = ran.stdout + ran.stderr
        if name != "rewind plan":  # the only command that reads the checkpoint alone
            wrong_args = tuple(str(bad_spec) if a == str(spec) else a for a in args)
            failed = _eos(*wrong_args)
            outputs[f"{name} (wrong password)"] = failed.stdout + failed.stderr
            # At once and by name, not as a transport timeout after the request's full timeout.
            assert failed.returncode == 2, (name, failed.stdout[-2000:], failed.stderr[-2000:])
            assert f"refused the SASL login of user {user!r} (SCRAM-SHA-512)" in failed.stderr, failed.stderr[-2000:]
        for kind, path in malformed.items():
            for form in ((), ("--json",)):
                broken = _eos(*(str(path) if a == str(spec) else a for a in args), *form)
                outputs[f"{name} ({kind}{' json' if form else ''})"] = broken.stdout + broken.stderr
                assert broken.returncode == 2, (name, kind, broken.stdout[-2000:], broken.stderr[-2000:])
                assert path.name in broken.stdout + broken.stderr and "sasl.password" in broken.stdout + broken.stderr

    # Every command got past the checkpoint read to its Kafka requests: none is a spec or checkpoint error.
    for name, ran in done.items():
        if name.startswith("rewind by verdict"):
            assert ran.returncode == 2 and "verification names none" in ran.stdout + ran.stderr, outputs[name][-2000:]
        else:
            assert ran.returncode in (0, 1), (name, outputs[name][-2000:])
    assert "NO_MARKER" in outputs["verify"], outputs["verify"][-2000:]
    dry_run = json.loads(done["abort dry run json"].stdout)
    assert dry_run["executed"] is False, dry_run
    assert [(row["transactional_id"], row["outcome"]) for row in dry_run["rows"]] == [
        (pipeline.spec.transactional_id(0), "would abort (dry run)")], dry_run
    # Nothing was aborted: the open transaction was never fenced, so its producer still commits it.
    lingering.commit_transaction(30)

    assert_absent(password, **outputs)
    assert_absent(wrong, **outputs)
    assert_absent(admin["sasl.password"], **outputs)
