"""A retried submit waits until no earlier driver of its run is alive: never two drivers of one run (note 37).

The submit operator's step before spark-submit. Every source of
:func:`~airflow_provider_eos.usecases.driver_liveness.observe_driver_anywhere` counts, in either
deploy mode: this host's process table (client mode, the earlier attempt ran here: it is asked to
stop), the driver's lease in the checkpoint and the cluster manager's record, which see a
cluster-mode driver (a YARN application master) from any host.
"""

from __future__ import annotations

import logging
from typing import Any

# common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_eos.core.driver import DriverHandle, Liveness
from airflow_provider_eos.core.driver_lease import lease_expiry_wait_s
from airflow_provider_eos.operators.driver import lease_checkpoint
from airflow_provider_eos.spark.driver_processes import request_stop
from airflow_provider_eos.usecases.driver_liveness import (
    earlier_driver,
    observe_driver_anywhere,
    wait_while_driver_alive,
)

__all__ = ["wait_for_previous_driver"]


def wait_for_previous_driver(handle: DriverHandle, checkpoint_location: str, *, checkpoint_conn_id: str | None,
                             lease_ttl_s: float, given_wait_s: float, log: logging.Logger | Any) -> None:
    """Return once no earlier driver of the run of ``handle`` is alive; refuse when one outlives the wait.

    :param handle: this attempt's driver record (its token is the run's, shared by every attempt).
    :param lease_ttl_s: the spec's ``driver_lease_ttl_s``: a SIGKILLed earlier driver's lease says
        ALIVE until ttl + 10 s, so the wait follows it (:func:`.lease_expiry_wait_s`).
    :param given_wait_s: the operator's ``previous_driver_wait_s``.
    :raises AirflowFailException: an earlier driver is still alive after the wait.
    """
    checkpoint = lease_checkpoint(checkpoint_location, checkpoint_conn_id, log)
    # Judged where the earlier driver runs (its lease says), not where this attempt does: a new host of the
    # same name cannot see the earlier driver's processes, and its process table must say so (UNKNOWN).
    earlier = earlier_driver(handle, checkpoint)
    seen = observe_driver_anywhere(earlier, checkpoint)
    if seen.liveness is not Liveness.ALIVE:
        log.info("No earlier driver of the pipeline is alive: %s", seen.evidence)
        return
    wait_s = lease_expiry_wait_s(lease_ttl_s, given_wait_s)
    log.info("An earlier driver of the pipeline still runs (%s); waiting up to %.0fs for it to exit",
             seen.evidence, wait_s)
    cluster = handle.deploy_mode == "cluster"
    if not cluster:
        # The earlier attempt's processes, if this host can see them. A cluster-mode driver runs in the cluster,
        # where no signal of this host reaches (its process table is UNKNOWN there: request_stop would send none).
        request_stop(earlier)
    seen = wait_while_driver_alive(earlier, checkpoint, wait_s)
    if seen.liveness is Liveness.ALIVE:
        how = (f"kill its application (tagged {handle.token}) in the cluster manager"
               f"{f' ({handle.manager_url})' if handle.manager_url else ''}"
               if cluster else "stop it on its host (it ends after its running batch on SIGTERM)")
        raise AirflowFailException(
            f"refusing to start a second driver for this run: an earlier one is still alive ({seen.evidence}). "
            f"To start anew, {how}, then clear this task."
        )
    log.info("No earlier driver of the pipeline is alive any more: %s", seen.evidence)
