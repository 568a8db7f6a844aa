"""How the submit operator has the Spark provider's hook start spark-submit and follow its output.

Four changes to the hook's own ``submit``, made by wrapping its steps (the provider has no
arguments for them): its command carries none of the env vars (on YARN and Kubernetes the provider
would make each a ``--conf``, secrets too; the plan put them in the private properties file);
spark-submit's environment is the allow-list, not the worker's; in client deploy mode it runs in a
session of its own; and each line of its output is also handed to the operator (for the links to
the Spark application, :mod:`~airflow_provider_eos.operators.application_links`) before the hook
reads it as it always does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.submit_environment import submit_environment

if TYPE_CHECKING:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

__all__ = ["launch_spark_submit"]


def _watched(lines: Iterable[Any], on_line: Callable[[str], None], on_end: Callable[[], None]) -> Iterator[Any]:
    """``lines`` unchanged, each shown to ``on_line`` first; ``on_end`` once they are all read."""
    for line in lines:
        on_line(str(line))
        yield line
    on_end()


def launch_spark_submit(hook: SparkSubmitHook, *, own_session: bool, on_line: Callable[[str], None] | None = None,
                        on_end: Callable[[], None] | None = None) -> None:
    """Have ``hook`` start spark-submit with the allow-listed environment and, in client mode, in a session of its own.

    Command: on YARN and Kubernetes the provider's command builder writes every env var as
    ``--conf spark.yarn.appMasterEnv.K=V`` (``spark.kubernetes.driverEnv.K=V``), where ``ps`` shows
    it; it builds the command without them. The plan wrote those a driver on the cluster needs to
    the private properties file (:func:`~airflow_provider_eos.spark.submit_command.driver_environment_conf`).

    Environment: the provider's ``submit`` starts spark-submit with a copy of this worker's whole
    environment plus its ``_env`` (on YARN and in client mode, the env vars) whenever that is set,
    and with its ``env`` argument otherwise. So ``_env`` is empty until spark-submit has started,
    ``env`` carries the env vars over the allow-listed environment, and then ``_env`` holds them
    for the provider's ``yarn application -kill``, as the provider's builder would have left it.

    Session: Airflow 3's supervisor signals a killed task's whole process group, SIGKILL 5 s
    after SIGTERM: spark-submit's JVM would stop its SparkContext mid-batch. Out of the group,
    the driver gets only the operator's ``on_kill`` signals and ends after its running batch; it also
    stops by itself when this task's process is gone (``EOS_DRIVER_OWNER_PID``).

    :param on_line: called with each line of spark-submit's output, before the hook reads it.
    :param on_end: called once the output has ended (spark-submit exited or closed it).
    """
    build, submit, follow = hook._build_spark_submit_command, hook.submit, hook._process_spark_submit_log
    held: dict[str, dict[str, Any] | None] = {}

    def build_holding_env(application: str) -> list[str]:
        env_vars, hook._env_vars = hook._env_vars, None
        try:
            command = build(application)
        finally:
            hook._env_vars = env_vars
        held["env"], hook._env = (dict(env_vars) if env_vars else None), None
        return command

    def follow_with_env(lines: Any) -> None:
        hook._env = held.get("env")  # back for the provider's kill of a YARN application
        if on_line is not None or on_end is not None:
            lines = _watched(lines, on_line or (lambda _: None), on_end or (lambda: None))
        follow(lines)

    def submit_allow_listed(application: str = "", **kwargs: Any) -> str | None:
        kwargs["env"] = submit_environment(os.environ, {k: str(v) for k, v in (hook._env_vars or {}).items()})
        if own_session:
            kwargs["start_new_session"] = True
        return submit(application, **kwargs)

    hook._build_spark_submit_command = build_holding_env  # type: ignore[method-assign]
    hook._process_spark_submit_log = follow_with_env  # type: ignore[method-assign]
    hook.submit = submit_allow_listed  # type: ignore[method-assign]
