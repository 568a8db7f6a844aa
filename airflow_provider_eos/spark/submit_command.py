"""The spark-submit command line of a pipeline: the one place the Airflow operator and ``eos run`` share.

Imports no PySpark: it only locates files (entry script, connector jars, the zipped package, the
packed environment). With a packed environment (``eos package``) executors run the archive's
interpreter (``--archives ENV#environment``, ``spark.pyspark.python=./environment/bin/python``);
without one, today's local setup: driver and executors run this machine's interpreter.
Nothing secret goes on the command line: the spec (with any connection secrets) is a file, and
secret Spark settings (the spec's or the caller's) go to a private properties file (:mod:`.secret_conf`),
as do the environment variables a driver on the cluster gets (:func:`driver_environment_conf`).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from airflow_provider_eos.core.driver import DRIVER_TOKEN_CONF, ENTRY_SCRIPT
from airflow_provider_eos.core.errors import PrerequisiteError, SubmissionError
from airflow_provider_eos.core.metrics.spark_conf import spark_metrics_conf
from airflow_provider_eos.core.secrets import SPARK_REDACTION_REGEX
from airflow_provider_eos.core.spec import Mode, PipelineSpec
from airflow_provider_eos.core.spec.submission import Connector, check_python_environment, url_scheme
from airflow_provider_eos.kafka.settings.java import SPARK_OPTIONS_REDACTION_REGEX
from airflow_provider_eos.kafka.settings.librdkafka import check_librdkafka_settings
from airflow_provider_eos.spark.job_environment import DISTRIBUTION_PACKAGES, ENVIRONMENT_ALIAS, EXECUTOR_PYTHON
from airflow_provider_eos.spark.secret_conf import (
    properties_keys,
    spark_defaults_file,
    split_secret_conf,
    write_secret_properties,
)
from airflow_provider_eos.spark.sink_points import run_mode as driver_mode

#: The packages zipped for ``--py-files``: the product, and the shell beside it (the entry script and the
#: example transforms, ``spark_jobs``), both of the one distribution.
PACKAGES_SHIPPED = DISTRIBUTION_PACKAGES
#: The package whose ``eos_job.py`` spark-submit runs.
ENTRY_PACKAGE = "spark_jobs"
#: The application tags YARN lists an application under (``/ws/v1/cluster/apps?applicationTags=``).
YARN_TAGS_KEY = "spark.yarn.tags"
#: The settings that set an environment variable of YARN's application master (in cluster deploy mode the
#: driver), and of a Kubernetes driver pod.
YARN_DRIVER_ENV_PREFIX = "spark.yarn.appMasterEnv."
K8S_DRIVER_ENV_PREFIX = "spark.kubernetes.driverEnv."
#: The variables Spark's YARN application master passes on to the executors it launches (``ExecutorRunnable``).
EXECUTOR_INHERITED_ENV_PREFIX = "SPARK"
#: The settings Spark hides by (``Utils.redact``); a user's own value, wherever set, is kept.
REDACTION_REGEX_KEY = "spark.redaction.regex"
#: Whether the Spark UI's kill links work (Spark's default: yes); a user's own value, wherever set, is kept.
UI_KILL_KEY = "spark.ui.killEnabled"
#: The job's defaults, each passed as ``--conf`` unless the spec, the caller or the properties file
#: (``--properties-file``, else the cluster's ``spark-defaults.conf``) sets it: a user's value wins.
# Driver mode collects each batch on the driver; Arrow makes that a columnar transfer.
DEFAULT_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.memory": "1g",
    # The Kafka source's options carry sasl.jaas.config and inline PEM keys: keep them out of
    # plans, the UI and event logs.
    "spark.sql.redaction.options.regex": SPARK_OPTIONS_REDACTION_REGEX,
    # Spark's default misses Azure account keys, SAS tokens, GCS key files and private keys: the
    # private properties file's values would show in the UI's Environment tab and the event log.
    REDACTION_REGEX_KEY: SPARK_REDACTION_REGEX,
    # Once the UI is on (`metrics`, or `spark.ui.enabled` in spark_conf), anyone who reaches its port, often
    # every host of the cluster's network, could kill the streaming job's stages from it.
    UI_KILL_KEY: "false",
}


@dataclass(frozen=True)
class SubmitPlan:
    """What spark-submit needs for one pipeline run.

    :param application: the entry script.
    :param application_args: its arguments (``--spec`` names the spec as the driver finds it).
    :param jars: connector jars for ``--jars`` (paths or URLs); empty when the conf names packages.
    :param py_files: this distribution's packages, zipped, for ``--py-files``: driver and executors run the
        submitter's code.
    :param files: files for ``--files`` (the spec, in cluster deploy mode).
    :param archives: ``ARCHIVE#alias`` entries for ``--archives`` (the packed environment).
    :param conf: ``--conf`` settings (none of them secret).
    :param env: environment variables of the spark-submit process.
    :param properties_file: ``--properties-file``: the secret settings and the environment of a driver on
        the cluster (owner-only), or ``None``.
    """

    application: Path
    application_args: list[str]
    jars: list[str]
    py_files: list[Path]
    files: list[Path] = field(default_factory=list)
    archives: list[str] = field(default_factory=list)
    conf: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    properties_file: Path | None = None

    def environment(self) -> dict[str, str]:
        """Environment variables for spark-submit (the local interpreter only when no packed environment is given)."""
        return dict(self.env)

    def command(self, spark_submit: str, master: str) -> list[str]:
        """The spark-submit argv: paths, names and settings only, never a secret (``ps`` shows it)."""
        args = [spark_submit, "--master", master]
        for option, values in (("--jars", self.jars), ("--py-files", self.py_files), ("--files", self.files),
                               ("--archives", self.archives)):
            if values:
                args += [option, ",".join(map(str, values))]
        if self.properties_file is not None:
            args += ["--properties-file", str(self.properties_file)]
        for key, value in sorted(self.conf.items()):
            args += ["--conf", f"{key}={value}"]
        return [*args, str(self.application), *self.application_args]


def _package_root(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise PrerequisiteError(f"package {name!r} is not importable", fix="pip install airflow-provider-eos")
    return Path(next(iter(spec.submodule_search_locations)))


def zip_packages(target_dir: Path) -> Path:
    """Zip the distribution's packages (job, writers, example transforms) for ``--py-files`` so executors can import
    transforms."""
    target_dir.mkdir(parents=True, exist_ok=True)
    archive = target_dir / "eos-py-files.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in PACKAGES_SHIPPED:
            root = _package_root(name)
            for path in sorted(root.rglob("*.py")):
                zf.write(path, path.relative_to(root.parent).as_posix())
    return archive


def entry_script() -> Path:
    """The spark-submit application: ``spark_jobs/eos_job.py``."""
    return _package_root(ENTRY_PACKAGE) / ENTRY_SCRIPT


def spark_submit_executable() -> str:
    """PySpark's own spark-submit (the one whose version matches the connector jars)."""
    spark_home = _package_root("pyspark")
    candidate = spark_home / "bin" / "spark-submit"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("spark-submit")
    if not found:
        raise PrerequisiteError("spark-submit was not found", fix="install the full pyspark distribution")
    return found


def plan_submit(  # noqa: PLR0913  # the spec plus each override a caller may give, all keyword-only
    spec_file: Path,
    spec: PipelineSpec,
    *,
    mode: Mode | str,
    work_dir: Path,
    deploy_mode: str | None = None,
    master: str | None = None,
    python_environment: str | None = None,
    connector: Connector | None = None,
    properties_file: Path | None = None,
    extra_conf: Mapping[str, str] | None = None,
    driver_token: str | None = None,
    env_vars: Mapping[str, str] | None = None,
) -> SubmitPlan:
    """The spark-submit plan of ``spec``.

    :param spec_file: the spec file the driver reads (holds connection secrets when an operator wrote it).
    :param spec: the spec, loaded from ``spec_file``.
    :param mode: the sink mode.
    :param work_dir: a private folder (0700) for the zipped package and the secret settings' file.
    :param deploy_mode: ``client`` (default) or ``cluster``. In cluster mode the driver runs on a
        cluster node: the spec travels with ``--files`` and the driver opens it by its base name.
        In client mode the driver is the local process and reads ``spec_file`` where it is:
        ``--files`` would also copy it, secrets included, into every executor's work folder,
        where the copies outlive the run (standalone workers keep ``work/app-*``).
    :param master: the Spark master, when the caller knows it: cluster deploy mode is refused on
        a standalone master (:func:`check_deploy_target`).
    :param python_environment: a packed environment (``eos package``); overrides the spec's.
    :param connector: how the connector jars travel; overrides the spec's.
    :param properties_file: a ``--properties-file`` the caller was given; with secret settings the
        plan's own file starts with it (else with ``spark-defaults.conf``) and replaces it.
    :param extra_conf: Spark settings the caller was given (the operator's ``conf`` argument); they
        win over the spec's ``spark_conf`` and take the same split: secrets to the private file.
    :param driver_token: the run's driver token (:func:`~airflow_provider_eos.core.driver.driver_token`):
        the driver finds it in its settings in every deploy mode (for its lease), and YARN lists the
        application under it as a tag (:func:`driver_tagging`).
    :param env_vars: environment variables the caller gives spark-submit beyond the plan's (they win); on YARN
        and Kubernetes they reach a driver on the cluster through the private properties file
        (:func:`driver_environment_conf`), never through the command line.
    :raises SubmissionError: a local jar or archive named does not exist; cluster deploy mode on a standalone master.
    :raises SpecError: a ``kafka`` setting librdkafka refuses (the job's sink would, after Spark started).
    """
    check_deploy_target(master, deploy_mode)
    check_librdkafka_settings(spec)
    cluster = (deploy_mode or "client") == "cluster"
    run_mode = driver_mode(mode)
    jars, connector_conf = connector_arguments(connector or spec.connector)
    jars = [*jars, *writer_jars(spec, run_mode)]
    archive = _archive_location(python_environment) if python_environment else spec.python_environment
    env: dict[str, str] = {}
    defaults = properties_file or spark_defaults_file()
    # --conf wins over the properties file: a default of ours must not override the user's (or the cluster's)
    # own value there (a cluster's spark.driver.memory, or the shuffle partitions a stateful checkpoint keeps).
    set_in_defaults = properties_keys(defaults)
    ours = {key: value for key, value in DEFAULT_CONF.items() if key not in set_in_defaults}
    conf = {**ours, **connector_conf, **spark_metrics_conf(spec.metrics)}
    archives: list[str] = []
    if archive is None:
        # Driver and executors run this interpreter, which has the Kafka clients installed.
        env = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    else:
        archives = [f"{_existing(archive, 'python_environment')}#{ENVIRONMENT_ALIAS}"]
        conf["spark.pyspark.python"] = EXECUTOR_PYTHON
        # A client-mode driver runs here, where the archive is not unpacked; a cluster-mode one runs beside it.
        conf["spark.pyspark.driver.python"] = EXECUTOR_PYTHON if cluster else sys.executable
    env = {**env, **(env_vars or {})}
    spec_arg = spec_file.name if cluster else str(spec_file)
    given = {**spec.spark_conf, **(extra_conf or {})}
    public, secret = split_secret_conf({**conf, **given, **driver_tagging(driver_token, given)})
    # Any variable may be a secret (AWS_SECRET_ACCESS_KEY): all of them go to the private file.
    secret.update(driver_environment_conf(env, master, deploy_mode))
    return SubmitPlan(
        application=entry_script(),
        application_args=["--spec", spec_arg, "--mode", run_mode],
        jars=jars,
        py_files=[zip_packages(work_dir)],
        files=[spec_file] if cluster else [],
        archives=archives,
        conf=public,
        env=env,
        properties_file=write_secret_properties(secret, work_dir, defaults) if secret else properties_file,
    )


def check_deploy_target(master: str | None, deploy_mode: str | None) -> None:
    """Refuse cluster deploy mode on a Spark standalone master (``spark://``): it cannot run this job.

    Spark's standalone cluster runs no Python application in cluster deploy mode (spark-submit
    refuses it); the Spark provider would fail later with an unrelated message about ``env_vars``.

    :raises SubmissionError: naming the master and the two ways that work.
    """
    if master and master.strip().startswith("spark://") and (deploy_mode or "client") == "cluster":
        raise SubmissionError(
            f"deploy mode 'cluster' on the Spark standalone master {master.strip()!r}: Spark standalone runs no "
            "Python application in cluster deploy mode, and the pipeline's job is one",
            fix="set the spark connection's deploy mode to client (extra {\"deploy-mode\": \"client\"}, the driver "
                "then runs on the Airflow worker), or run the pipeline on YARN in cluster deploy mode",
        )


def driver_tagging(token: str | None, given: Mapping[str, str]) -> dict[str, str]:
    """The settings that let the driver and the cluster manager name the driver by its token.

    ``spark.eos.driverTag``: the driver reads it when the environment does not carry the token
    (cluster deploy mode). ``spark.yarn.tags``: the token beside the tags the user gave, so the
    ResourceManager can be asked for the run's applications from any worker (other masters ignore it).
    """
    if not token:
        return {}
    tags = [tag for tag in given.get(YARN_TAGS_KEY, "").split(",") if tag.strip() and tag.strip() != token]
    return {DRIVER_TOKEN_CONF: token, YARN_TAGS_KEY: ",".join([*tags, token])}


def driver_environment_conf(env: Mapping[str, str], master: str | None, deploy_mode: str | None) -> dict[str, str]:
    """The settings that give the job's processes on the cluster the variables of ``env`` they need.

    The Spark provider's hook puts every ``env_vars`` entry on spark-submit's command line as
    ``--conf spark.yarn.appMasterEnv.K=V`` (Kubernetes: ``spark.kubernetes.driverEnv.K=V``), where
    ``ps`` shows it to every user; the plan writes them to the private properties file instead, and
    the operator keeps them from the hook's command (design note 74). Masters are told apart as the
    provider does.

    Cluster deploy mode: the driver runs in YARN's application master or in the driver pod, so it
    gets all of ``env``. Client mode: the driver is spark-submit's own process and has ``env`` from
    its environment; on YARN the application master only launches executors and passes on to them
    the variables named ``SPARK*`` alone, so only those go (no secret the driver needs leaves this
    machine); on Kubernetes there is no driver pod, so none go.
    """
    if not master or not env:
        return {}
    cluster = (deploy_mode or "client") == "cluster"
    if "yarn" in master:
        return {f"{YARN_DRIVER_ENV_PREFIX}{name}": str(value) for name, value in env.items()
                if cluster or name.startswith(EXECUTOR_INHERITED_ENV_PREFIX)}
    if "k8s" in master and cluster:
        return {f"{K8S_DRIVER_ENV_PREFIX}{name}": str(value) for name, value in env.items()}
    return {}


def _existing(location: str, what: str) -> str:
    """A local path must exist here (spark-submit ships it); a URL is the cluster's to fetch."""
    if url_scheme(location) or Path(location).exists() or any(c in location for c in "*?["):
        return location
    raise SubmissionError(f"{what} {location!r} does not exist on this machine",
                          fix=f"check the path, or give a URL the cluster can read, in {what}")


def _archive_location(given: str) -> str:
    """A packed environment given on the command line or to the operator: checked like the spec's field.

    A relative local path is taken from the working folder (``eos run --environment env.tar.gz``).
    """
    location = given if url_scheme(given) else str(Path(given).expanduser().resolve())
    try:
        return check_python_environment(location) or location
    except ValueError as err:
        raise SubmissionError(str(err), fix="give the archive `eos package` wrote (.tar.gz), or its URL") from None


def writer_jars(spec: PipelineSpec, run_mode: str) -> list[str]:
    """The ``jvm/`` module's jar when the run needs it (:meth:`PipelineSpec.ships_jvm_jar`), shipped like the
    connector.

    The plan reader in it reads every batch's plan under ``writers`` ``auto`` or ``executors``; its JVM
    writer runs the executor writers' tasks and the driver writer's spill (``executor_writer: jvm``). A
    run that is not exactly-once (``run_mode``, which ``eos run --mode`` may set apart from the spec's)
    needs no jar.

    :raises PrerequisiteError: the jar is not built (or older than its sources), naming the fix.
    """
    if not spec.ships_jvm_jar(run_mode):
        return []
    from airflow_provider_eos.devstack.jars import executor_writer_jar

    return [str(executor_writer_jar(build=False))]


def connector_arguments(connector: Connector | None) -> tuple[list[str], dict[str, str]]:
    """The ``--jars`` list and the ``--conf`` settings that ship the connector the user chose.

    Without a connector: the jars the devstack resolved on this machine, never resolving with
    Maven at task time (``eos jars`` does that when asked).
    """
    if connector is None:
        from airflow_provider_eos.devstack.jars import spark_connector_jars

        return [str(jar) for jar in spark_connector_jars(resolve=False)], {}
    if connector.jars:
        return [_existing(jar, "connector jar") for jar in connector.jars], {}
    conf = {"spark.jars.packages": ",".join(connector.packages)}
    if connector.repositories:
        conf["spark.jars.repositories"] = ",".join(connector.repositories)
    return [], conf
