"""Secret detection by name and by value (core/secrets.py): the storage credentials users set in ``spark_conf``.

Every secret found here goes to spark-submit's private properties file instead of ``--conf``
(``ps`` and the task log show argv), and is hidden by :func:`redact_config` and in error messages.
"""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.secrets import REDACTED, is_secret_key, is_secret_setting, redact_config, redact_text
from airflow_provider_eos.spark.secret_conf import split_secret_conf
from airflow_provider_eos.spark.submit_command import DEFAULT_CONF

ACCOUNT = "eosdata"
SECRET_NAMES = [
    # Azure (ABFS/WASB): account keys per account, SAS tokens, OAuth client secrets
    f"fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net",
    f"spark.hadoop.fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net",
    f"spark.hadoop.fs.azure.account.key.{ACCOUNT}.blob.core.windows.net",
    f"fs.azure.account.key.{ACCOUNT}",
    f"spark.hadoop.fs.azure.sas.checkpoints.{ACCOUNT}.blob.core.windows.net",
    "spark.hadoop.fs.azure.sas.fixed.token",
    f"spark.hadoop.fs.azure.sas.fixed.token.{ACCOUNT}.dfs.core.windows.net",
    "spark.hadoop.fs.azure.account.oauth2.client.secret",
    f"spark.hadoop.fs.azure.account.oauth2.client.secret.{ACCOUNT}.dfs.core.windows.net",
    # S3A: access, secret and session keys, also per bucket; SSE-C keys
    "spark.hadoop.fs.s3a.access.key", "spark.hadoop.fs.s3a.secret.key", "spark.hadoop.fs.s3a.session.token",
    "spark.hadoop.fs.s3a.bucket.eos-checkpoints.access.key",
    "spark.hadoop.fs.s3a.bucket.eos-checkpoints.secret.key",
    "spark.hadoop.fs.s3a.bucket.eos-checkpoints.session.token",
    "spark.hadoop.fs.s3a.encryption.key", "spark.hadoop.fs.s3a.server-side-encryption.key",
    "spark.executorEnv.AWS_SECRET_ACCESS_KEY", "spark.executorEnv.AWS_SESSION_TOKEN",
    # GCS: private keys and key files
    "spark.hadoop.fs.gs.auth.service.account.private.key",
    "spark.hadoop.fs.gs.auth.service.account.private.key.id",
    "spark.hadoop.google.cloud.auth.service.account.json.keyfile",
    "spark.hadoop.fs.gs.auth.service.account.json.keyfile",
    "spark.hadoop.fs.gs.auth.client.secret",
    # keystore, truststore and key passwords
    "ssl.keystore.password", "ssl.truststore.password", "ssl.key.password",
    "spark.ssl.keyStorePassword", "spark.ssl.trustStorePassword", "spark.ssl.keyPassword",
    "spark.ssl.ui.keyStorePassword", "spark.ssl.rpc.keyPassword",
    "spark.authenticate.secret", "spark.kubernetes.authenticate.driver.oauthToken",
    # the Java client's JAAS config, also as a Spark option
    "sasl.jaas.config", "kafka.sasl.jaas.config", "spark.kafka.clusters.main.sasl.jaas.config",
]
NOT_SECRET_NAMES = [
    "spark.hadoop.fs.azure.account.auth.type", "spark.hadoop.fs.azure.account.oauth.provider.type",
    f"spark.hadoop.fs.azure.account.keyprovider.{ACCOUNT}.dfs.core.windows.net",
    "spark.hadoop.fs.azure.account.oauth2.client.id", "spark.hadoop.fs.azure.account.oauth2.client.endpoint",
    "spark.hadoop.fs.azure.sas.token.provider.type", "spark.hadoop.fs.s3a.aws.credentials.provider",
    "spark.hadoop.fs.s3a.endpoint", "spark.hadoop.fs.s3a.path.style.access",
    "spark.hadoop.fs.s3a.encryption.algorithm", "spark.hadoop.fs.gs.auth.type", "spark.hadoop.fs.gs.project.id",
    "spark.ssl.keyStore", "spark.ssl.trustStore", "spark.ssl.keyStoreType", "spark.ssl.enabled",
    "spark.kubernetes.authenticate.submission.oauthTokenFile", "spark.sql.shuffle.partitions",
    "spark.executor.memory", "sasl.username", "ssl.keystore.location", "ssl_keyfile", "key.serializer",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_storage_and_tls_credentials_are_secret_by_name(name: str) -> None:
    assert is_secret_key(name)


@pytest.mark.parametrize("name", NOT_SECRET_NAMES)
def test_names_of_where_or_how_are_not_secrets(name: str) -> None:
    assert not is_secret_key(name)


SAS = "sv=2022-11-02&ss=b&srt=co&sp=rwl&se=2030-01-01T00:00:00Z&sig=c2VjcmV0LXNpZw%3D%3D"
SECRET_VALUES = [
    ("https://ghp_TOKEN0123456789@git.example.com/org/repo.git", "ghp_TOKEN0123456789"),
    ("https://deploy:pw-6d1c@repo.example.com/maven2", "pw-6d1c"),
    (f"abfss://checkpoints:pw-77aa@{ACCOUNT}.dfs.core.windows.net/x", "pw-77aa"),
    (SAS, "c2VjcmV0LXNpZw"),
    (f"?{SAS}", "c2VjcmV0LXNpZw"),
    (f"https://{ACCOUNT}.blob.core.windows.net/env/env.tar.gz?{SAS}", "c2VjcmV0LXNpZw"),
    ("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=5f3e9a01", "5f3e9a01"),
    ("https://storage.googleapis.com/b/o?X-Goog-Signature=77ab01cd&X-Goog-Expires=60", "77ab01cd"),
    ("https://metastore.example.com/api?token=tok-41c2", "tok-41c2"),
    ("https://api.example.com/x?a=1&access_token=at-0c9d", "at-0c9d"),
    ('org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" password="pw-19f0";',
     "pw-19f0"),
    ("-Dlog4j.configurationFile=/etc/log4j2.xml -Djavax.net.ssl.keyStorePassword=ks-5e5e", "ks-5e5e"),
    (f"DefaultEndpointsProtocol=https;AccountName={ACCOUNT};AccountKey=YWNjb3VudC1rZXk=;", "YWNjb3VudC1rZXk"),
    ('{"type": "service_account", "private_key_id": "pk-id-88", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIE"}',
     "pk-id-88"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA"),
    ("Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", "eyJhbGciOiJIUzI1NiJ9"),
]
NOT_SECRET_VALUES = [
    "s3a://eos-checkpoints/orders", f"abfss://checkpoints@{ACCOUNT}.dfs.core.windows.net/orders",
    f"wasbs://checkpoints@{ACCOUNT}.blob.core.windows.net/orders", "https://repo.maven.apache.org/maven2",
    "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider", "SASL_SSL://broker:9093,broker2:9093",
    "-Dlog4j.configurationFile=/etc/log4j2.xml -XX:+UseG1GC", "4", "true", "1g", "",
    '{"orders":{"0":42,"1":-2}}', "principal=eos", *DEFAULT_CONF.values(),
]


@pytest.mark.parametrize(("value", "secret"), SECRET_VALUES)
def test_a_secret_looking_value_is_secret_under_any_name(value: str, secret: str) -> None:
    assert is_secret_setting("spark.app.note", value)
    assert redact_config({"spark.app.note": value}) == {"spark.app.note": REDACTED}
    scrubbed = redact_text(f"checkpoint at {value} is unreachable")
    assert secret not in scrubbed and "is unreachable" in scrubbed, scrubbed


@pytest.mark.parametrize("value", NOT_SECRET_VALUES)
def test_ordinary_values_are_not_secrets(value: str) -> None:
    assert not is_secret_setting("spark.app.note", value)
    assert redact_text(f"value {value} ok") == f"value {value} ok"


def test_the_split_sends_secrets_by_name_or_value_to_the_private_file() -> None:
    key = f"spark.hadoop.fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net"
    conf = {key: "YWNjb3VudC1rZXk=", "spark.jars.repositories": "https://deploy:pw-6d1c@repo.example.com/maven2",
            "spark.executor.memory": "1g"}
    public, secret = split_secret_conf(conf)
    assert public == {"spark.executor.memory": "1g"}
    assert secret == {key: "YWNjb3VudC1rZXk=", "spark.jars.repositories": conf["spark.jars.repositories"]}
