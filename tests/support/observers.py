"""An observer that stands for another Airflow worker on this machine (design note 35)."""

from __future__ import annotations

from airflow_provider_eos.core.driver import HostIdentity
from airflow_provider_eos.spark.driver_processes import this_host_identity


def another_worker() -> HostIdentity:
    """This host's identity seen from another pid namespace (another worker's container): its view of the
    process table is no evidence about a driver submitted from here."""
    here = this_host_identity()
    return here.model_copy(update={"pid_namespace": (here.pid_namespace or 0) + 1})
