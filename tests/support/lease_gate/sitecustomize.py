"""Test-only: holds every starting driver at its lease until all the test's drivers are there.

Put this folder first on a driver's ``PYTHONPATH`` with ``EOS_TEST_LEASE_GATE=<folder>`` and
``EOS_TEST_LEASE_GATE_PARTIES=<n>``: when the driver imports the lease keeper, its ``acquire`` first
writes ``<folder>/<pid>`` and waits (polling every 0.2 ms, at most 180 s) until ``n`` such files are
there, so ``n`` drivers whose JVMs started seconds apart take the lease within a millisecond of each
other (design note 79). Without the variable this module does nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
import time

_GATE = os.environ.get("EOS_TEST_LEASE_GATE")
_KEEPER_MODULE = "airflow_provider_eos.spark.driver_lease"


def _gated(acquire):
    def acquire_together(self) -> None:
        parties = int(os.environ.get("EOS_TEST_LEASE_GATE_PARTIES", "2"))
        with open(os.path.join(_GATE, str(os.getpid())), "w") as mark:
            mark.write("at the lease\n")
        deadline = time.monotonic() + 180
        while len(os.listdir(_GATE)) < parties and time.monotonic() < deadline:
            time.sleep(0.0002)
        return acquire(self)

    return acquire_together


class _GatingLoader(importlib.abc.Loader):
    """The keeper module's own loader, which then gates ``LeaseKeeper.acquire``.

    A wrapper, not a patch of that loader: a ``--py-files`` zip's one ``zipimporter`` loads every module of it.
    """

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        module.LeaseKeeper.acquire = _gated(module.LeaseKeeper.acquire)


class _GateFinder(importlib.abc.MetaPathFinder):
    """Finds the keeper's module as usual, through :class:`_GatingLoader`."""

    def find_spec(self, name, path, target=None):
        if name != _KEEPER_MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        spec.loader = _GatingLoader(spec.loader)
        return spec


if _GATE:
    sys.meta_path.insert(0, _GateFinder())
