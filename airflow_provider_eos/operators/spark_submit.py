"""Submit a pipeline's Spark job with the Spark provider's ``SparkSubmitOperator``.

The application, jars, py-files, files, archives and conf all come from the pipeline spec
through :mod:`airflow_provider_eos.spark.submit_command`, the same plan ``eos run`` uses, so
the DAG and the terminal submit the same job. The connection is the Spark provider's ``spark``
connection (master, deploy mode, queue). In cluster deploy mode the spec travels with ``--files``;
the driver runs on a cluster host, so a retry and ``stop_stream`` observe it through its lease and
the cluster manager, never the worker's process table, and ``stop_stream`` stops it by killing its
YARN application (:mod:`~airflow_provider_eos.usecases.cluster_stop`). Spark standalone runs no
Python application in cluster mode: the plan refuses it.

On YARN in cluster deploy mode the operator follows the application through the Spark
provider's ResourceManager REST tracking (``yarn_track_via_rm_api``): spark-submit returns once
YARN accepted the application, the task polls ``/ws/v1/cluster/apps/<id>`` and killing the task
PUTs ``{"state": "KILLED"}`` there, with no ``yarn`` command on the worker. The ResourceManager's
web address is the connection extra ``yarn_resourcemanager_webapp_address`` (the provider's), or
else the one the ``yarn-site.xml`` of spark-submit's ``HADOOP_CONF_DIR`` or ``YARN_CONF_DIR`` names
(:func:`~airflow_provider_eos.core.hadoop_conf.resourcemanager_webapp_address`, ResourceManager HA
too); with neither the submit is refused before anything is submitted (design note 66).

Connection secrets reach the job only inside the spec file the operator writes: mode 0600 in a
private (0700) temporary folder, removed when the task ends; never on the command line, in the
log, in XCom or in a rendered template field. Secret Spark settings, the spec's ``spark_conf`` and
the operator's ``conf`` alike, go to a private ``--properties-file`` (:mod:`~airflow_provider_eos.spark.secret_conf`).
spark-submit does not inherit the worker's environment (its ``AIRFLOW_CONN_*``, Fernet key, JWT
secret): it starts with the allow-list of :mod:`airflow_provider_eos.core.submit_environment` and
the operator's ``env_vars``.

The task's page links to the driver's Spark UI and to the application in its cluster manager
(:mod:`~airflow_provider_eos.operators.application_links`), as soon as spark-submit's output names them.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.common.compat.openlineage.utils.spark import (
    inject_parent_job_information_into_spark_properties,
    inject_transport_information_into_spark_properties,
)

# common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
from airflow.sdk.log import mask_secret

from airflow_provider_eos.core.application_links import LinkScanner
from airflow_provider_eos.core.driver import DRIVER_XCOM_KEY, DriverHandle, driver_token, submission_environment
from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.secrets import is_secret_setting
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.spec.submission import Connector, parse_connector
from airflow_provider_eos.core.submit_environment import withheld
from airflow_provider_eos.hooks.kafka_admin import load_pipeline_spec
from airflow_provider_eos.operators.application_links import LinkPublisher, SparkApplicationLink, SparkUiLink
from airflow_provider_eos.operators.cluster_manager import STANDALONE_WEBUI_EXTRA, manager_url, required_resourcemanager
from airflow_provider_eos.operators.driver import earliest_driver_start
from airflow_provider_eos.operators.lineage import announce_outputs, openlineage_facets
from airflow_provider_eos.operators.previous_driver import wait_for_previous_driver
from airflow_provider_eos.operators.run_input import record_run_input
from airflow_provider_eos.operators.spark_submit_launch import launch_spark_submit
from airflow_provider_eos.operators.use_case import task_failures
from airflow_provider_eos.spark.detached_stop import hand_over_stop
from airflow_provider_eos.spark.driver_processes import request_stop, this_host_identity
from airflow_provider_eos.spark.submit_command import plan_submit, spark_submit_executable

if TYPE_CHECKING:
    import jinja2
    from airflow.providers.openlineage.extractors import OperatorLineage
    from airflow.sdk import Context

__all__ = ["STANDALONE_WEBUI_EXTRA", "EosSparkSubmitOperator", "write_private_spec"]


def write_private_spec(spec: PipelineSpec, folder: Path) -> Path:
    """Write ``spec`` (connection secrets included) as ``folder/spec.yaml``, readable only by this user.

    The file is created with mode 0600 before anything is written to it; ``folder`` should be private too.
    """
    spec_file = folder / "spec.yaml"
    descriptor = os.open(spec_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(yaml.safe_dump(spec.to_dict()))
    return spec_file


def _joined(planned: Sequence[object], given: str | None) -> str | None:
    """The plan's entries, then what the DAG author passed to SparkSubmitOperator, comma-separated."""
    entries = [*map(str, planned), *([given] if given else [])]
    return ",".join(entries) or None


class EosSparkSubmitOperator(SparkSubmitOperator):
    """Run the exactly-once job of one pipeline spec through spark-submit.

    An ``available_now`` spec runs until the available input is processed, then the task
    succeeds; a processing-time spec runs until stopped (the task is long-lived: supervise it
    in parallel with :class:`~airflow_provider_eos.sensors.health.StreamingQueryHealthSensor`).
    Killing the task (marked failed or cleared in the UI, a timeout) stops a driver in client mode
    cleanly: SIGTERM to the Python driver, which ends its query after the running batch. The task
    has only seconds before Airflow's SIGKILL, so it does not wait: a detached stop
    (:mod:`~airflow_provider_eos.spark.detached_stop`) SIGKILLs the process group of the task's
    spark-submit if the driver is still there after ``kill_grace_period_s`` (stuck in a batch);
    the recovery branch waits for the driver to be gone. A new attempt of the same run waits for the previous
    attempt's driver to be gone before it submits: never two drivers of one run. Every process of
    the submission carries the run's driver token, recorded in the XCom
    ``driver``, so the recovery branch can stop the driver and confirm it is gone. An ``available_now``
    run first records its input's ends, what its ``wait_healthy`` compares with (XCom ``run_input``, :mod:`.run_input`).

    :param spec_path: the pipeline spec file. (templated)
    :param mode: ``exactly-once`` (default: the spec's mode) or ``at-least-once`` (baseline only).
        (templated)
    :param kafka_conn_id: an Airflow ``kafka`` connection whose settings replace the spec's
        connection settings; the job then reads a private copy of the spec with them; empty (a
        template rendering ``""``): none. (templated)
    :param python_environment: a packed Python environment (``eos package``), a path on this
        worker or a URL; replaces the spec's ``python_environment``. (templated)
    :param connector: how Spark's Kafka connector reaches the cluster, replacing the spec's
        ``connector``: ``{"jars": [...]}`` (paths or URLs) or ``{"packages": [...], "repositories": [...]}``.
    :param conn_id: the Spark provider's ``spark`` connection (master URL, deploy mode).
    :param previous_driver_wait_s: how long a new attempt waits for the previous attempt's driver to
        finish its batch and exit (seen on this host, in its lease or by the cluster manager); at
        run time at least the spec's ``driver_lease_ttl_s`` + 25 s, so a killed driver's lease can expire.
    :param checkpoint_conn_id: an Airflow connection with the checkpoint storage credentials (where the
        previous driver's lease is); default: the worker's ambient credentials. (templated)
    :param kill_grace_period_s: how long the driver of a killed task may take to finish its running
        batch before its process group is SIGKILLed (client mode).
    :param env_vars: variables spark-submit gets beyond the allow-list (the worker's environment does
        not reach it): whatever the job or a transform needs, e.g. ``AWS_PROFILE``. Never on the command
        line: a cluster-mode driver on YARN or Kubernetes gets them through the private properties file.
    :param kwargs: anything else :class:`SparkSubmitOperator` accepts (``executor_memory``, ...).
    """

    template_fields: Sequence[str] = (
        *SparkSubmitOperator.template_fields, "spec_path", "mode", "kafka_conn_id", "python_environment",
        "checkpoint_conn_id",
    )
    ui_color = "#f4c47a"
    # Their XComs are pushed while spark-submit runs: the links show while the task runs.
    operator_extra_links = (SparkUiLink(), SparkApplicationLink())

    def __init__(
        self,
        *,
        spec_path: str,
        mode: str | None = None,
        kafka_conn_id: str | None = None,
        python_environment: str | None = None,
        connector: Connector | Mapping[str, Any] | None = None,
        conn_id: str = "spark_default",
        previous_driver_wait_s: float = 180,
        kill_grace_period_s: float = 60,
        checkpoint_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("name", "eos-pipeline")
        super().__init__(conn_id=conn_id, **kwargs)
        self.spec_path = spec_path
        self.mode = mode
        self.kafka_conn_id = kafka_conn_id
        self.python_environment = python_environment
        # Validated when the DAG is parsed: a typo fails the parse, naming the value.
        self.connector = parse_connector(connector, where=f"{type(self).__name__} argument connector")
        # The ResourceManager's address from HADOOP_CONF_DIR or YARN_CONF_DIR, when the connection gives none.
        self._resourcemanager_url: str | None = None
        self.previous_driver_wait_s = previous_driver_wait_s
        self.checkpoint_conn_id = checkpoint_conn_id
        if kill_grace_period_s < 0:
            raise SpecError(f"kill_grace_period_s is {kill_grace_period_s}; it must be 0 or more",
                            fix=f"give {type(self).__name__} a grace period in seconds, e.g. 60")
        self.kill_grace_period_s = kill_grace_period_s
        self._driver: DriverHandle | None = None

    def execute(self, context: Context) -> None:
        # mkdtemp: a folder only this user can enter (0700), so the spec copy below is private twice.
        work_dir = Path(tempfile.mkdtemp(prefix="eos-submit-"))
        try:
            with task_failures():
                # A template rendering "" names no connection, as for the other operators and the sensor.
                spec = load_pipeline_spec(self.spec_path, self.kafka_conn_id or None)
                spec_file = Path(self.spec_path).resolve()
                if self.kafka_conn_id:
                    spec_file = write_private_spec(spec, work_dir)
                mode = self.mode or spec.mode
                connection = self._get_hook()._connection
                token = driver_token(spec.name, context["ti"].dag_id, context["run_id"])
                plan = plan_submit(spec_file, spec, mode=mode, work_dir=work_dir,
                                   deploy_mode=connection["deploy_mode"], master=connection["master"],
                                   python_environment=self.python_environment, connector=self.connector,
                                   properties_file=Path(self.properties_file) if self.properties_file else None,
                                   extra_conf=self._conf_with_openlineage(context), driver_token=token,
                                   env_vars=self._env_with_driver_token(token, connection["deploy_mode"]))
            self.application = str(plan.application)
            self.application_args = plan.application_args
            self.jars = _joined(plan.jars, self.jars)
            self.py_files = _joined(plan.py_files, self.py_files)
            self.files = _joined(plan.files, self.files)
            self._archives = _joined(plan.archives, self._archives)
            # The plan holds the DAG author's conf too, split like the spec's: only public settings here.
            self.conf = plan.conf
            # The secret settings (spec's and DAG author's) and the env vars a driver on the cluster gets, in a
            # private file, not on spark-submit's command line (the hook builds its command without env vars).
            self.properties_file = str(plan.properties_file) if plan.properties_file else None
            self.env_vars = plan.environment()
            self.name = f"eos-{spec.name}"
            # PySpark's own spark-submit: its version is the one the connector jars were resolved for.
            self._spark_binary = self._spark_binary or spark_submit_executable()
            with task_failures():
                self._track_through_resourcemanager()
            self._record_driver(context, spec.name)
            resumed = self._resumed_application(context)
            if resumed:
                self.log.info("The Spark provider reconnects to the earlier try's live application %s: no second "
                              "driver is submitted, so none is waited for", resumed)
            else:
                self._wait_for_previous_driver(spec.checkpoint_location, spec.driver_lease_ttl_s)
            record_run_input(context["ti"], spec, self.log)  # what this run's supervise compares the group with
            self.log.info("Submitting pipeline %s (%s) with %d connector jars%s", spec.name, mode, len(plan.jars),
                          f", packed environment {plan.archives[0]}" if plan.archives else "")
            super().execute(context)
            announce_outputs(context, PipelineSpec.load(self.spec_path), self.outlets)
        finally:
            shutil.rmtree(work_dir, ignore_errors=True)

    def get_openlineage_facets_on_start(self) -> OperatorLineage:
        """The pipeline's input and output topics, for the openlineage provider's listener.

        Read from the spec file alone, as the DAG's inlets are: the cluster is named by the spec's own
        bootstrap servers, and no connection (no credential) is looked up in the listener.
        """
        return openlineage_facets(PipelineSpec.load(self.spec_path))

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> OperatorLineage:
        """The same topics when the run ends (a run that failed read and wrote them as far as it got)."""
        return self.get_openlineage_facets_on_start()

    def _conf_with_openlineage(self, context: Context) -> dict[str, Any]:
        """The DAG author's ``conf`` with the OpenLineage properties the provider injects, added now.

        The provider's ``execute`` adds them to ``conf`` after this operator split it into public settings
        and the private properties file: a transport's API key would reach spark-submit's command line.
        Injected here, they take the same split, and the provider's own injection is switched off.
        """
        conf = dict(self.conf or {})
        if self._openlineage_inject_parent_job_info:
            conf = inject_parent_job_information_into_spark_properties(conf, context)
        if self._openlineage_inject_transport_info:
            conf = inject_transport_information_into_spark_properties(conf, context)
        self._openlineage_inject_parent_job_info = self._openlineage_inject_transport_info = False
        return conf

    def render_template_fields(self, context: Context, jinja_env: jinja2.Environment | None = None) -> None:
        """Render the templated fields, then register the secret ``conf`` values with the secrets masker.

        The rendered fields are stored and shown on the task's *Rendered Templates* tab through the
        masker, which knows ``password``-like names but not, say, an Azure account key's.
        """
        super().render_template_fields(context, jinja_env)
        for key, value in (self.conf or {}).items():
            if isinstance(value, str) and value and is_secret_setting(key, value):
                mask_secret(value)

    def _get_hook(self) -> SparkSubmitHook:
        hook = super()._get_hook()
        if self._resourcemanager_url:
            # The hook's cache of the connection extra, which is absent: the address is yarn-site.xml's.
            hook._yarn_rm_base_url = self._resourcemanager_url
        return hook

    def _track_through_resourcemanager(self) -> None:
        """On YARN in cluster deploy mode, follow and kill the application through the ResourceManager's REST API.

        :raises SubmissionError: no ResourceManager address is known (:func:`.required_resourcemanager`).
        """
        hook = self._get_hook()
        if not hook._is_yarn_cluster_mode or self._yarn_track_via_rm_api:
            return
        self._resourcemanager_url = required_resourcemanager(hook, self._conn_id, self._submit_environment())
        self.log.info("Following the YARN application through the ResourceManager at %s", self._resourcemanager_url)
        self._yarn_track_via_rm_api = True
        self._hook = None  # rebuilt with the tracking on

    def _submit_environment(self) -> dict[str, str]:
        """Where spark-submit's Hadoop configuration is named (``HADOOP_CONF_DIR``, ``YARN_CONF_DIR``)."""
        return {**os.environ, **{key: str(value) for key, value in (self.env_vars or {}).items()}}

    def _env_with_driver_token(self, token: str, deploy_mode: str | None) -> dict[str, str]:
        """The DAG author's ``env_vars`` and the driver token; in client mode also this task's pid.

        Every process of the submission carries the token; a client-mode driver stops by itself once
        the task's process (``EOS_DRIVER_OWNER_PID``) is gone.
        """
        client_mode = str(deploy_mode or "client") != "cluster"
        return {**{key: str(value) for key, value in (self.env_vars or {}).items()},
                **submission_environment(token, owner_pid=os.getpid() if client_mode else None)}

    def _record_driver(self, context: Context, pipeline: str) -> None:
        """Start spark-submit, its processes tagged with the run's driver token, and record where they run.

        The XCom ``driver`` is what the recovery branch reads to stop the driver and to establish
        that it is gone before it aborts anything (docs/architecture.md, recovery). spark-submit's output
        is also read for the task's links to the Spark UI and the application (``spark_ui_url``,
        ``spark_application_url``: :mod:`~airflow_provider_eos.operators.application_links`).
        """
        token = driver_token(pipeline, context["ti"].dag_id, context["run_id"])
        self._hook = self._get_hook()
        client_mode = str(self._hook._connection["deploy_mode"] or "client") != "cluster"
        # The identity beyond the host name (boot, pid namespace, user): an observer elsewhere cannot mistake
        # a live driver for a gone one (docs/architecture.md, recovery).
        handle = DriverHandle(
            pipeline=pipeline, token=token, master=str(self._hook._connection["master"]),
            deploy_mode=str(self._hook._connection["deploy_mode"] or "client"),
            submitted_at=dt.datetime.now(dt.UTC), earliest_start=earliest_driver_start(context),
            manager_url=self._manager_url(), **this_host_identity().model_dump(),
        )
        links = LinkPublisher(context["ti"], LinkScanner(handle.master, handle.deploy_mode, handle.manager_url),
                              self.log)
        hook = self._hook
        launch_spark_submit(hook, own_session=client_mode, on_line=links.line,
                            on_end=lambda: links.ended(getattr(hook, "_yarn_application_id", None)))
        self.log.info("spark-submit starts without %d variables of this worker's environment (pass what the job "
                      "needs in env_vars)", len(withheld(os.environ)))
        self._driver = handle
        context["ti"].xcom_push(key=DRIVER_XCOM_KEY, value=handle.model_dump(mode="json"))
        self.log.info("Driver token %s on host %s (%s)", token, handle.host, handle.master)

    def _manager_url(self) -> str | None:
        """Where the cluster manager keeps its record of the application (the recovery branch asks it)."""
        return self._resourcemanager_url or manager_url(self._hook, self._conn_id, self._submit_environment())

    def _wait_for_previous_driver(self, checkpoint_location: str, lease_ttl_s: float) -> None:
        """A retried or cleared task of the same run: wait until no earlier driver of the pipeline is alive.

        In either deploy mode (:func:`~airflow_provider_eos.operators.previous_driver.wait_for_previous_driver`).
        """
        if self._driver is None:
            return
        wait_for_previous_driver(self._driver, checkpoint_location, checkpoint_conn_id=self.checkpoint_conn_id,
                                 lease_ttl_s=lease_ttl_s, given_wait_s=self.previous_driver_wait_s, log=self.log)

    def _resumed_application(self, context: Context) -> str | None:
        """The live application the provider's durable tracking reconnects to instead of submitting, or ``None``.

        Airflow 3.3's ``ResumableJobMixin``: a retry of a YARN cluster-mode task whose earlier try's
        application (kept in ``task_state_store``) is still live follows that application and starts
        none, so there is no second driver to wait for. Asked as the mixin asks (the provider's own
        status and judgement of it); below Airflow 3.3 no task state is kept and every try submits.
        """
        store = context.get("task_state_store")
        self._hook = self._hook or self._get_hook()  # the provider's backend asks the ResourceManager through it
        if store is None or not getattr(self, "durable", False) or not self._hook._is_yarn_cluster_mode:
            return None
        stored = store.get(self.external_id_key)
        if not stored:
            return None
        try:
            live = self.is_job_active(self.get_job_status(stored, context))
        except Exception as err:  # the ResourceManager away: no reconnection known, so the wait decides
            self.log.warning("The earlier try's application %s cannot be asked for its state: %s", stored, err)
            return None
        return str(stored) if live else None

    def on_kill(self) -> None:
        """Stop a client-mode driver: SIGTERM now, SIGKILL of its process group after the grace period.

        Other deploy modes: the provider's kill. Returns at once (Airflow SIGKILLs the task within
        seconds): the escalation runs detached, scoped to this task's spark-submit session.
        """
        if self._driver is None or self._driver.deploy_mode == "cluster":
            super().on_kill()
            return
        submitted = getattr(self._hook, "_submit_sp", None)  # the provider's spark-submit process, once started
        group = submitted.pid if submitted is not None else None  # its own session: its pid leads its group
        seen = request_stop(self._driver, group=group)
        self.log.info("Asked the driver to stop after its running batch (SIGTERM): %s", seen.evidence)
        if group is None or not seen.processes:
            return
        stopper = hand_over_stop(self._driver, group=group, grace_s=self.kill_grace_period_s)
        self.log.info("If the driver is still there in %.0fs, process group %d is SIGKILLed (detached stop, pid %d)",
                      self.kill_grace_period_s, group, stopper)
