"""The environment spark-submit starts with: an allow-list, never the Airflow worker's whole environment.

spark-submit passes its environment on to the driver, to the Python workers of local executors
and so to user transforms (and in standalone cluster deploy mode sends it to the cluster). An
Airflow worker's environment holds its secrets: every ``AIRFLOW_CONN_*``, ``AIRFLOW__CORE__FERNET_KEY``,
the API's JWT secret, the metadata database's URL, cloud credentials. The job reads none of them:
connection settings reach it in the private spec file, secret Spark settings in the private
properties file. So spark-submit gets what Java, Spark, Hadoop/YARN, Kerberos, Python and this
package's job read from the environment, and whatever the caller passes explicitly (the driver
token, the interpreter, an operator's ``env_vars``): anything else the job needs travels that way.

This module is the one owner of the list; the operator and ``eos run`` both start spark-submit
with :func:`submit_environment`.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["PASSED_NAMES", "PASSED_PREFIXES", "is_passed_on", "submit_environment", "withheld"]

#: Variables passed on by name.
PASSED_NAMES = frozenset({
    # The process itself: where programs are, whose it is, its locale, clock and scratch space.
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP", "LD_LIBRARY_PATH",
    # Java: spark-submit's JVM and the driver's.
    "JAVA_HOME", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS",
    # Hadoop and YARN clients (HDFS checkpoints, YARN submission, delegation tokens). Not HADOOP_*
    # wholesale: HADOOP_CREDSTORE_PASSWORD is a secret.
    "HADOOP_CONF_DIR", "YARN_CONF_DIR", "HADOOP_HOME", "HADOOP_COMMON_HOME", "HADOOP_HDFS_HOME",
    "HADOOP_YARN_HOME", "HADOOP_MAPRED_HOME", "HADOOP_USER_NAME", "HADOOP_PROXY_USER",
    "HADOOP_TOKEN_FILE_LOCATION", "HADOOP_OPTS", "HADOOP_CLIENT_OPTS",
    # Python: the driver's and the workers' interpreters (tests and benchmarks put the repo on the path).
    "PYTHONPATH", "PYTHONHOME", "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "PYTHONUTF8",
    "VIRTUAL_ENV",
    # Trusted certificates (paths) for TLS from Python.
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
})

#: Variables passed on by prefix: Spark's and PySpark's own (``SPARK_HOME``, ``SPARK_CONF_DIR``,
#: ``SPARK_SUBMIT_OPTS``, ``PYSPARK_PYTHON`` ...), Kerberos' (``KRB5CCNAME``, ``KRB5_CONFIG``), the
#: locale's, and this package's (``EOS_LOG_LEVEL``, ``EOS_SINK_PLUGIN``, ``EOS_FAULT_*``, ``EOS_DRIVER_*``: none is
#: a secret).
PASSED_PREFIXES = ("SPARK_", "PYSPARK_", "KRB5", "LC_", "EOS_")


def is_passed_on(name: str) -> bool:
    """Whether the worker's variable ``name`` reaches spark-submit without being passed explicitly."""
    return name in PASSED_NAMES or name.startswith(PASSED_PREFIXES)


def submit_environment(ambient: Mapping[str, str], explicit: Mapping[str, str] | None = None) -> dict[str, str]:
    """spark-submit's environment: the allow-listed part of ``ambient``, then ``explicit`` over it.

    :param ambient: the launching process's environment (``os.environ``).
    :param explicit: what the launcher passes on purpose; it wins over ``ambient``.
    """
    return {**{name: value for name, value in ambient.items() if is_passed_on(name)}, **(explicit or {})}


def withheld(ambient: Mapping[str, str]) -> list[str]:
    """The names (never the values) of the variables of ``ambient`` that do not reach spark-submit."""
    return sorted(name for name in ambient if not is_passed_on(name))
