"""The spec's ``connector`` (how Spark's Kafka connector reaches the cluster) and ``python_environment``.

Bad input is a :class:`SpecError` naming the field, the value and the fix, when the spec or the
operator argument is read, not inside spark-submit.
"""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.spec.submission import Connector, parse_connector

BASE = {
    "name": "orders",
    "kafka": {"bootstrap.servers": "localhost:9092"},
    "input_topics": ["orders-in"],
    "output_topic": "orders-out",
    "group_id": "orders-sink",
    "transactional_id_prefix": "orders-eos",
    "checkpoint_location": "/tmp/checkpoints/orders",
}
KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"


def spec(**fields: object) -> PipelineSpec:
    return PipelineSpec.from_dict({**BASE, **fields})


def test_without_connector_and_environment_the_spec_keeps_todays_defaults():
    plain = spec()
    assert plain.connector is None and plain.python_environment is None
    assert PipelineSpec.from_dict(plain.to_dict()) == plain


@pytest.mark.parametrize("jars", [
    ["/opt/eos/jars/spark-sql-kafka-0-10_2.13-4.2.0.jar", "/opt/eos/jars/kafka-clients-4.1.1.jar"],
    ["/opt/eos/jars/*.jar"],
    ["https://repo.example.com/maven2/org/apache/spark/spark-sql-kafka-0-10_2.13-4.2.0.jar"],
    ["hdfs://namenode:8020/jars/spark-sql-kafka-0-10_2.13-4.2.0.jar", "local:/opt/spark/extra/kafka-clients.jar"],
])
def test_jars_by_absolute_path_glob_or_url_round_trip(jars):
    chosen = spec(connector={"jars": jars})
    assert chosen.connector == Connector(jars=jars)
    assert PipelineSpec.from_dict(chosen.to_dict()).connector.jars == jars


def test_packages_with_the_users_repository_round_trip():
    chosen = spec(connector={"packages": [KAFKA_PACKAGE], "repositories": ["https://repo.example.com/maven2"]})
    assert chosen.connector.packages == [KAFKA_PACKAGE]
    assert chosen.connector.repositories == ["https://repo.example.com/maven2"]
    assert chosen.connector.jars == []


@pytest.mark.parametrize(("connector", "named", "fix_word"), [
    ({"jars": ["jars/spark-sql-kafka.jar"]}, "'jars/spark-sql-kafka.jar' is a relative path", "absolute"),
    ({"jars": ["/opt/jars"]}, "'/opt/jars' does not end with .jar", "jars:"),
    ({"jars": ["/opt/a.jar,/opt/b.jar"]}, "contains ',' or '#'", "jars:"),
    ({"jars": ["https://user:hunter2@repo.example.com/a.jar"]}, "carries credentials", "without credentials"),
    ({"packages": ["org.apache.spark:spark-sql-kafka-0-10_2.13"]}, "is not a Maven coordinate", KAFKA_PACKAGE),
    ({"packages": [KAFKA_PACKAGE], "repositories": ["repo.example.com/maven2"]}, "is not an http(s)://", "base URL"),
    ({"packages": [KAFKA_PACKAGE], "repositories": ["https://me:pw@repo.example.com/m2"]}, "carries credentials",
     "spark.jars.ivySettings"),
    ({"jars": ["/opt/a.jar"], "packages": [KAFKA_PACKAGE]}, "both jars and packages", "either"),
    ({}, "neither jars nor packages", "either"),
    ({"jars": ["/opt/a.jar"], "repositories": ["https://repo.example.com/m2"]}, "without packages", "either"),
    ({"jar": ["/opt/a.jar"]}, "unknown keys 'jar' (did you mean 'jars'?)", "either"),
])
def test_a_bad_connector_is_a_spec_error_naming_the_value_and_the_fix(connector, named, fix_word):
    with pytest.raises(SpecError) as caught:
        spec(connector=connector)
    text = str(caught.value)
    assert "connector" in text and named in text and fix_word in text, text
    assert "hunter2" not in text or "carries credentials" in text


def test_an_operator_argument_is_validated_by_the_same_model_and_named():
    assert parse_connector(None, where="x") is None
    assert parse_connector({"jars": ["/opt/a.jar"]}, where="x") == Connector(jars=["/opt/a.jar"])
    with pytest.raises(SpecError) as caught:
        parse_connector({"packages": ["spark-sql-kafka"]}, where="EosSparkSubmitOperator argument connector")
    assert "EosSparkSubmitOperator argument connector is invalid" in str(caught.value)
    assert "packages: package 'spark-sql-kafka' is not a Maven coordinate" in str(caught.value)
    assert caught.value.fix and "jars" in caught.value.fix


@pytest.mark.parametrize("archive", ["/opt/eos/eos-job-env.tar.gz", "hdfs://nn:8020/envs/eos.tgz", "/e/env.zip"])
def test_python_environment_is_an_absolute_path_or_url_of_an_archive(archive):
    assert spec(python_environment=archive).python_environment == archive


@pytest.mark.parametrize(("archive", "named"), [
    ("eos-job-env.tar.gz", "is a relative path"),
    ("/opt/eos/eos-job-env", "does not end with .tar.gz or .tgz or .tar or .zip"),
    ("/opt/eos/env.tar.gz#environment", "contains ',' or '#'"),
])
def test_a_bad_python_environment_names_the_value_and_eos_package(archive, named):
    with pytest.raises(SpecError) as caught:
        spec(python_environment=archive)
    assert f"python_environment {archive!r}" in str(caught.value) and named in str(caught.value)
    assert "eos package --out" in str(caught.value)
