"""spark-submit's environment is an allow-list: the Airflow worker's secrets never reach the driver or transforms."""

from __future__ import annotations

from airflow_provider_eos.core.submit_environment import submit_environment, withheld

WORKER = {
    # An Airflow worker's secrets, and what is merely Airflow's.
    "AIRFLOW_CONN_X": "kafka://user:secret@broker:9092",
    "AIRFLOW__CORE__FERNET_KEY": "fernet-secret",
    "AIRFLOW__API_AUTH__JWT_SECRET": "jwt-secret",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "postgresql://airflow:pw@db/airflow",
    "AIRFLOW_VAR_TOKEN": "variable-secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "HADOOP_CREDSTORE_PASSWORD": "keystore-secret",
    "AIRFLOW_HOME": "/opt/airflow",
    # What Java, Spark, Hadoop, Kerberos, Python and the job read.
    "PATH": "/venv/bin:/usr/bin", "HOME": "/home/airflow", "USER": "airflow", "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8", "TZ": "UTC", "TMPDIR": "/scratch", "JAVA_HOME": "/usr/lib/jvm/java-17",
    "JAVA_TOOL_OPTIONS": "-Djava.net.preferIPv4Stack=true", "SPARK_HOME": "/venv/pyspark",
    "SPARK_CONF_DIR": "/etc/spark", "SPARK_SUBMIT_OPTS": "-XX:SharedArchiveFile=/c/spark.jsa",
    "PYSPARK_PYTHON": "/venv/bin/python", "HADOOP_CONF_DIR": "/etc/hadoop", "YARN_CONF_DIR": "/etc/hadoop",
    "HADOOP_USER_NAME": "spark", "HADOOP_TOKEN_FILE_LOCATION": "/tmp/tokens", "KRB5CCNAME": "FILE:/tmp/krb5cc",
    "KRB5_CONFIG": "/etc/krb5.conf", "PYTHONPATH": "/repo", "LD_LIBRARY_PATH": "/opt/hadoop/lib/native",
    "EOS_LOG_LEVEL": "DEBUG", "EOS_FAULT_INJECTION": "after_produce@3", "EOS_FAULT_INJECTION_ACK": "yes",
    "EOS_FAULT_REPORT": "/tmp/faults", "SSL_CERT_FILE": "/etc/ssl/ca.pem",
}
SECRETS = {"AIRFLOW_CONN_X", "AIRFLOW__CORE__FERNET_KEY", "AIRFLOW__API_AUTH__JWT_SECRET",
           "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "AIRFLOW_VAR_TOKEN", "AWS_SECRET_ACCESS_KEY",
           "HADOOP_CREDSTORE_PASSWORD", "AIRFLOW_HOME"}


def test_the_workers_secrets_stay_behind_and_what_the_job_reads_travels() -> None:
    child = submit_environment(WORKER)
    assert not SECRETS & child.keys(), sorted(SECRETS & child.keys())
    assert child == {name: value for name, value in WORKER.items() if name not in SECRETS}
    assert set(withheld(WORKER)) == SECRETS


def test_what_the_caller_passes_explicitly_travels_and_wins() -> None:
    child = submit_environment(WORKER, {"EOS_DRIVER_TOKEN": "eos-p-0123456789abcdef0123", "PYSPARK_PYTHON": "/x/py",
                                        "AWS_PROFILE": "chosen-by-the-dag-author"})
    assert child["EOS_DRIVER_TOKEN"] == "eos-p-0123456789abcdef0123"
    assert child["PYSPARK_PYTHON"] == "/x/py" and child["AWS_PROFILE"] == "chosen-by-the-dag-author"
    assert "AIRFLOW_CONN_X" not in child


def test_an_empty_worker_environment_gives_an_empty_child_environment() -> None:
    assert submit_environment({}) == {}

