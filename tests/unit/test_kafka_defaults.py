"""Kafka's default ``transaction.max.timeout.ms`` has one owner, :mod:`airflow_provider_eos.core.kafka_defaults`.

The devstack's brokers, pre-flight's fallback for a broker that does not report it, health's and abort's
judgement of old transactions and the spec's error text each spelled 900000 on their own; a second spelling
can drift from the first without anything noticing. The package's source must not spell it anywhere else.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import airflow_provider_eos
from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.kafka_defaults import KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from airflow_provider_eos.core.spec import PipelineSpec

PACKAGE = Path(airflow_provider_eos.__file__).parent
OWNER = PACKAGE / "core" / "kafka_defaults.py"
SPELLINGS = re.compile(r"(?<![\d_])900_?000(?![\d_])")


def test_only_the_owner_spells_kafkas_default_max_transaction_timeout() -> None:
    spelled = [f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
               for path in sorted(PACKAGE.rglob("*.py")) if path != OWNER
               for number, line in enumerate(path.read_text().splitlines(), 1) if SPELLINGS.search(line)]
    assert not spelled, "use KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS instead of:\n" + "\n".join(spelled)
    assert KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS == 900_000  # Kafka's TransactionStateManagerConfig default


def test_every_reader_takes_the_owners_value() -> None:
    from airflow_provider_eos.cli.main import build_parser
    from airflow_provider_eos.core.health import HealthThresholds
    from airflow_provider_eos.core.preflight import KAFKA_BROKER_DEFAULTS

    assert KAFKA_BROKER_DEFAULTS["transaction.max.timeout.ms"] == KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
    assert HealthThresholds(warn_after_ms=1, stop_after_ms=1, hang_after_ms=1, lingering_after_ms=1) \
        .input_hang_after_ms == KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
    up = build_parser().parse_args(["devstack", "up"])
    assert up.transaction_max_timeout_ms == KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS


def test_the_specs_error_for_a_timeout_above_a_java_int_names_kafkas_default() -> None:
    spec = {"name": "orders", "kafka": {"bootstrap.servers": "localhost:1"}, "input_topics": ["orders"],
            "output_topic": "orders-out", "group_id": "orders-sink", "transactional_id_prefix": "orders-eos",
            "checkpoint_location": "/tmp/checkpoints/orders", "transaction_timeout_ms": 2**31}
    with pytest.raises(SpecError, match=f"transaction.max.timeout.ms \\({KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS} by"):
        PipelineSpec.from_dict(spec)
