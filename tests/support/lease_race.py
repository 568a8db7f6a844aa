"""Two lease keepers taking one checkpoint's lease at the same instant (design note 79)."""

from __future__ import annotations

import threading

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import DriverLeaseHeldError
from airflow_provider_eos.spark.driver_lease import LeaseKeeper


def race_for_the_lease(
    checkpoint: CheckpointReader, tokens: tuple[str, ...], ttl_s: float
) -> tuple[list[LeaseKeeper], list[DriverLeaseHeldError]]:
    """Keepers of ``tokens`` acquire together, released by a barrier: the winners and the refusals.

    Any other failure of a taker fails the caller's test (an ``AssertionError`` naming it).
    """
    barrier = threading.Barrier(len(tokens))
    won: list[LeaseKeeper] = []
    refused: list[DriverLeaseHeldError] = []
    failed: list[BaseException] = []

    def take(token: str) -> None:
        keeper = LeaseKeeper(checkpoint, token, ttl_s, app_id=f"local-{token[-4:]}")
        barrier.wait()
        try:
            keeper.acquire()
            won.append(keeper)
        except DriverLeaseHeldError as err:
            refused.append(err)
        except BaseException as err:  # the caller's test reports it
            failed.append(err)

    threads = [threading.Thread(target=take, args=(token,), name=f"eos-test-taker-{n}") for n, token in
               enumerate(tokens)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failed, failed
    assert not any(thread.is_alive() for thread in threads), "a taker hung"
    return won, refused
