"""The pipelines the bench runs: one spec per job, every writing mode with the same producer settings."""

from __future__ import annotations

from pathlib import Path

import yaml

from airflow_provider_eos.core.spec import Mode, PipelineSpec

EXACTLY_ONCE, AT_LEAST_ONCE = Mode.EXACTLY_ONCE, Mode.AT_LEAST_ONCE


# Spark conf of every job the bench starts: modest heaps, the machine is shared.
SPARK_CONF = {"spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2"}


#: Producer settings of every mode that writes (the raw producer, Spark's Kafka writer, both exactly-once
#: writers): in the spec's ``kafka`` settings, so each client gets them in its own dialect. The values are
#: the exactly-once sink's own defaults (librdkafka's batch.size), which Spark's Java producer would not use.
PRODUCER_SETTINGS = {"compression.type": "lz4", "linger.ms": 20, "batch.size": 1_000_000, "acks": "all",
                     "enable.idempotence": True}


def write_spec(
    work_dir: Path,
    bootstrap: str,
    *,
    name: str,
    input_topics: list[str],
    output_topic: str,
    trigger: str = "available_now",
    max_offsets_per_trigger: int,
    transaction_timeout_ms: int = 60_000,
    spark_conf: dict[str, str] | None = None,
    writers: str = "auto",
    executor_writer: str | None = None,
    metrics: dict[str, object] | None = None,
) -> tuple[PipelineSpec, Path]:
    """A spec with a fresh checkpoint, group and prefix under ``work_dir/name``; returns it and its file.

    ``writers`` and ``executor_writer`` are the spec's fields (``None``: the spec's default); they
    matter for exactly-once only; ``metrics`` is the spec's block (the driver's exporter).
    """
    folder = work_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    spec = PipelineSpec(
        name=name.replace("-", "_"), kafka={"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS},
        input_topics=input_topics,
        output_topic=output_topic, group_id=f"{name}-sink", transactional_id_prefix=f"{name}-txn",
        checkpoint_location=str(folder / "checkpoint"), trigger=trigger,
        max_offsets_per_trigger=max_offsets_per_trigger, transaction_timeout_ms=transaction_timeout_ms,
        spark_conf={**SPARK_CONF, **(spark_conf or {})}, writers=writers,
        **({"executor_writer": executor_writer} if executor_writer else {}),
        **({"metrics": metrics} if metrics else {}),
    )
    spec_file = folder / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(spec.to_dict()))
    return spec, spec_file
