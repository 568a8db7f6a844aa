"""The pipeline spec: the one description of a pipeline shared by every task and by the Spark job.

A spec is written as YAML or JSON (or built in Python) and validated completely on load, so a
typo fails the DAG parse or the first task with a message naming the field, the value and the
fix, instead of failing inside Spark or Kafka later.

- :mod:`.pipeline_spec`: :class:`PipelineSpec` (fields, validators, derived values, JSON);
- :mod:`.sink_modes`: the sink's settings :class:`Mode`, :class:`Writers` and :class:`ExecutorWriter`;
- :mod:`.field_rules`: the rules for names, numbers, trigger, checkpoint, transform;
- :mod:`.topic_rules`: the rules for the topics: names, the parts they play, starting offsets;
- :mod:`.kafka_keys`: the rules for the shared ``kafka`` client config;
- :mod:`.validation_errors`: pydantic's errors as one :class:`SpecError`;
- :mod:`.observability`: the ``metrics`` settings (:class:`MetricsSettings`);
- :mod:`.document`: reading one spec file; :mod:`.folder`: reading a folder of them.
"""

from __future__ import annotations

from airflow_provider_eos.core.spec.document import SPEC_SUFFIXES
from airflow_provider_eos.core.spec.field_rules import TRIGGER_AVAILABLE_NOW
from airflow_provider_eos.core.spec.folder import (
    SpecFolder,
    is_spec_file_name,
    load_spec_files,
    load_specs,
    scan_spec_folder,
)
from airflow_provider_eos.core.spec.kafka_keys import RESERVED_KAFKA_KEYS
from airflow_provider_eos.core.spec.observability import MetricsSettings
from airflow_provider_eos.core.spec.pipeline_spec import PipelineSpec
from airflow_provider_eos.core.spec.sink_modes import ExecutorWriter, Mode, Writers

__all__ = [
    "RESERVED_KAFKA_KEYS",
    "SPEC_SUFFIXES",
    "TRIGGER_AVAILABLE_NOW",
    "ExecutorWriter",
    "MetricsSettings",
    "Mode",
    "PipelineSpec",
    "SpecFolder",
    "Writers",
    "is_spec_file_name",
    "load_spec_files",
    "load_specs",
    "scan_spec_folder",
]
