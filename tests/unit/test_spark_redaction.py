"""Spark hides every secret setting of the job, not only those its default ``spark.redaction.regex`` knows.

Secret ``spark_conf`` settings travel in the private properties file, but Spark shows every
setting it has in the UI's Environment tab and the event log, redacting only those whose name or
value its ``spark.redaction.regex`` finds. Spark's default misses an Azure account key, a SAS
token, a GCS key file, a private key: the job's default conf sets the regex
:mod:`airflow_provider_eos.core.secrets` builds from its own rules, unless the user set one.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.core.secrets import (
    SECRET_NAMES,
    SECRET_WORDS,
    SPARK_DEFAULT_REDACTION_REGEX,
    SPARK_REDACTION_REGEX,
    is_secret_key,
)
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.spark.submit_command import DEFAULT_CONF, REDACTION_REGEX_KEY, plan_submit
from tests.unit.test_secret_detection import NOT_SECRET_NAMES, SECRET_VALUES
from tests.unit.test_secret_detection import SECRET_NAMES as SECRET_SETTING_NAMES

ACCOUNT = "eosdata"
AZURE_KEY = f"spark.hadoop.fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net"
AZURE_KEY_VALUE = "QXp1cmVBY2NvdW50S2V5LW5ldmVyLXNob3du=="


def spark_finds(regex: str, text: str) -> bool:
    """Whether Spark's redaction would hide a setting with this name or value (``Regex.findFirstIn``)."""
    return re.search(regex, text) is not None


def _names_of_every_rule() -> list[str]:
    """A name per rule of the detection table, in the dialects it judges: dotted, snake and camel case."""
    names = []
    for word in sorted(SECRET_WORDS):
        names += [f"spark.hadoop.fs.x.{word}", f"spark.hadoop.fs.x.{word}.{ACCOUNT}", f"my_{word}_value",
                  f"spark.ssl.my{word.capitalize()}", f"{word.upper()}_FOR_APP"]
    for name in sorted(SECRET_NAMES):
        names += [name, f"kafka.{name}"]
    names += [
        AZURE_KEY, "fs.azure.account.key", "AccountKey", "account_key",
        "spark.hadoop.google.cloud.auth.service.account.json.keyfile", "jsonKeyfile",
        "spark.hadoop.fs.s3a.access.key", "api_key", "apiKey",
    ]
    return names


@pytest.mark.parametrize("name", _names_of_every_rule() + SECRET_SETTING_NAMES)
def test_every_secret_name_of_the_detection_table_is_redacted_by_spark(name: str) -> None:
    assert is_secret_key(name), f"{name} is no example of a secret name"
    assert spark_finds(SPARK_REDACTION_REGEX, name), name


@pytest.mark.parametrize(("value", "secret"), SECRET_VALUES)
def test_every_secret_value_of_the_detection_table_is_redacted_by_spark(value: str, secret: str) -> None:
    assert spark_finds(SPARK_REDACTION_REGEX, value), value


@pytest.mark.parametrize("name", NOT_SECRET_NAMES)
def test_names_that_are_no_secret_stay_visible_unless_sparks_default_hides_them(name: str) -> None:
    assert spark_finds(SPARK_REDACTION_REGEX, name) == spark_finds(SPARK_DEFAULT_REDACTION_REGEX, name), name


def test_what_sparks_default_misses_and_the_jobs_regex_hides() -> None:
    missed = [AZURE_KEY, f"spark.hadoop.fs.azure.sas.checkpoints.{ACCOUNT}.blob.core.windows.net",
              "spark.hadoop.google.cloud.auth.service.account.json.keyfile",
              "spark.hadoop.fs.gs.auth.service.account.private.key"]
    for name in missed:
        assert not spark_finds(SPARK_DEFAULT_REDACTION_REGEX, name) and spark_finds(SPARK_REDACTION_REGEX, name)
    # Everything the default finds is still found.
    for text in ("x.secret", "mypassword", "AUTH_TOKEN", "fs.s3a.access.key", "accesskey"):
        assert spark_finds(SPARK_REDACTION_REGEX, text), text


def _plan(tmp_path: Path, spark_conf: dict[str, str] | None = None, **kwargs: Any):
    spec = PipelineSpec.from_dict({
        "name": "orders", "kafka": {"bootstrap.servers": "b:9092"}, "input_topics": ["in"], "output_topic": "out",
        "group_id": "g", "transactional_id_prefix": "p", "checkpoint_location": str(tmp_path / "checkpoint"),
        "spark_conf": spark_conf or {}, "connector": {"jars": [str(_jar(tmp_path))]},
    })
    spec_file = tmp_path / "orders.yaml"
    spec_file.write_text("{}")
    (tmp_path / "work").mkdir(exist_ok=True)
    return plan_submit(spec_file, spec, mode=spec.mode, work_dir=tmp_path / "work", **kwargs)


def _jar(tmp_path: Path) -> Path:
    jar = tmp_path / "connector.jar"
    jar.touch()
    return jar


def test_the_job_sets_the_regex_unless_the_user_set_their_own(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "no-conf"))  # no spark-defaults.conf of this machine
    assert DEFAULT_CONF[REDACTION_REGEX_KEY] == SPARK_REDACTION_REGEX
    assert _plan(tmp_path).conf[REDACTION_REGEX_KEY] == SPARK_REDACTION_REGEX
    assert _plan(tmp_path, {REDACTION_REGEX_KEY: "(?i)mine"}).conf[REDACTION_REGEX_KEY] == "(?i)mine"
    assert _plan(tmp_path, extra_conf={REDACTION_REGEX_KEY: "(?i)theirs"}).conf[REDACTION_REGEX_KEY] == "(?i)theirs"
    # Set in a properties file (the caller's, or the cluster's spark-defaults.conf): --conf would override it.
    given = tmp_path / "given.properties"
    given.write_text("# comment\nspark.executor.memory 2g\nspark.redaction.regex   (?i)ours|\\\n  continued\n")
    assert REDACTION_REGEX_KEY not in _plan(tmp_path, properties_file=given).conf
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("spark.redaction.regex=(?i)cluster\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    assert REDACTION_REGEX_KEY not in _plan(tmp_path).conf
    # A continued value's next line is no key.
    (conf_dir / "spark-defaults.conf").write_text("spark.other=a\\\nspark.redaction.regex\n")
    assert _plan(tmp_path).conf[REDACTION_REGEX_KEY] == SPARK_REDACTION_REGEX


def test_no_default_of_the_job_overrides_the_properties_files_value(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "no-conf"))
    given = tmp_path / "cluster.properties"
    given.write_text("spark.driver.memory 8g\nspark.sql.shuffle.partitions=200\nspark.ui.enabled true\n")
    conf = _plan(tmp_path, properties_file=given).conf
    # --conf wins over the file: the cluster's driver memory and the shuffle partitions a stateful checkpoint
    # records at its first start would be overridden.
    assert {"spark.driver.memory", "spark.sql.shuffle.partitions", "spark.ui.enabled"}.isdisjoint(conf)
    assert conf["spark.sql.execution.arrow.pyspark.enabled"] == "true"
    # Without the file, the job's defaults apply; the spec's own value wins over both.
    assert _plan(tmp_path).conf["spark.driver.memory"] == "1g"
    spec_wins = _plan(tmp_path, {"spark.sql.shuffle.partitions": "16"}, properties_file=given).conf
    assert spec_wins["spark.sql.shuffle.partitions"] == "16"


# Spark's own redaction, in its own JVM: the environment as the event log records it, and Utils.redact.
_SPARK_PROGRAM = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession

    regex, event_logs, settings, texts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    builder = (SparkSession.builder.master("local[1]").appName("eos-redaction")
               .config("spark.ui.enabled", "false").config("spark.driver.memory", "512m")
               .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", event_logs)
               .config("spark.eventLog.compress", "false")
               .config("spark.redaction.regex", regex))
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    sc = spark.sparkContext
    jvm, conf = sc._jvm, sc._jsc.sc().conf()
    pairs = jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(conf.getAll())
    redacted = jvm.org.apache.spark.util.Utils.redact(conf, pairs).iterator()
    shown = {}
    while redacted.hasNext():
        pair = redacted.next()
        shown[pair._1()] = pair._2()
    pattern = jvm.java.util.regex.Pattern.compile(regex)
    found = [text for text in texts if pattern.matcher(text).find()]
    spark.stop()
    print("EOS-REDACTED " + json.dumps({key: shown.get(key) for key in settings}))
    print("EOS-FOUND " + json.dumps(found))
""")


@pytest.mark.spark
def test_spark_hides_an_azure_key_in_its_environment_and_event_log(tmp_path: Path) -> None:
    from airflow_provider_eos.devstack.jars import require_java

    require_java()
    settings = {
        AZURE_KEY: AZURE_KEY_VALUE,
        f"spark.hadoop.fs.azure.sas.checkpoints.{ACCOUNT}.blob.core.windows.net": "sv=2022&sig=c2FzLXNpZw%3D",
        "spark.hadoop.fs.gs.auth.service.account.private.key": "-----BEGIN PRIVATE KEY-----MIIEv",
        "spark.executor.cores": "1",
    }
    event_logs = tmp_path / "event-logs"
    event_logs.mkdir()
    regex = DEFAULT_CONF[REDACTION_REGEX_KEY]
    texts = _names_of_every_rule() + SECRET_SETTING_NAMES + NOT_SECRET_NAMES + [v for v, _ in SECRET_VALUES]
    done = subprocess.run([sys.executable, "-c", _SPARK_PROGRAM, regex, event_logs.as_uri(), json.dumps(settings),
                           json.dumps(texts)],
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("EOS-REDACTED ")]
    shown = json.loads(line.removeprefix("EOS-REDACTED "))
    assert shown.pop("spark.executor.cores") == "1", shown  # not everything is hidden
    assert all(value is not None and "redacted" in value for value in shown.values()), shown
    # Also where Spark rolls event logs: a folder per application, holding the event files.
    recorded = "".join(p.read_text(encoding="utf-8") for p in sorted(event_logs.rglob("*")) if p.is_file())
    assert "SparkListenerEnvironmentUpdate" in recorded and AZURE_KEY in recorded
    for value in settings.values():
        if value != "1":
            assert value not in recorded, f"{value!r} is in the event log"
    assert AZURE_KEY_VALUE not in done.stdout + done.stderr
    # Java's regex engine reads the regex as Python's does (the tests above judge it with Python's).
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("EOS-FOUND ")]
    assert json.loads(line.removeprefix("EOS-FOUND ")) == [t for t in texts if spark_finds(regex, t)]
