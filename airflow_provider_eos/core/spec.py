"""The pipeline spec: the one description of a pipeline shared by every task and by the Spark job.

A spec is written as YAML or JSON (or built in Python) and validated completely on load, so a
typo fails the DAG parse or the first task with a message naming the field, the value and the
fix, instead of failing inside Spark or Kafka later.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from airflow_provider_eos.core import transactional_ids
from airflow_provider_eos.core.errors import EosError, SpecError

#: File suffixes :meth:`PipelineSpec.load` and :func:`load_specs` read.
SPEC_SUFFIXES = (".yaml", ".yml", ".json")

TRIGGER_AVAILABLE_NOW = "available_now"


class Mode(StrEnum):
    """The delivery guarantee of the sink: the one spelling the spec, the CLI and the job share."""

    EXACTLY_ONCE = "exactly-once"
    AT_LEAST_ONCE = "at-least-once"


class Writers(StrEnum):
    """Where the exactly-once sink writes (DESIGN.md section 2): the driver, the executors, or chosen per plan."""

    AUTO = "auto"
    DRIVER = "driver"
    EXECUTORS = "executors"


_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
# Kafka's own rule (org.apache.kafka.common.internals.Topic): legal chars and at most 249 long.
_TOPIC_RE = re.compile(r"[A-Za-z0-9._-]{1,249}")
_TRANSFORM_RE = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
)
# Spark parses processing-time triggers as interval strings with full unit names; accepting only
# those keeps a spec that validates here from failing later in DataStreamWriter.trigger().
_INTERVAL_RE = re.compile(r"(?:interval\s+)?(\d+)\s*(millisecond|second|minute|hour|day)s?", re.IGNORECASE)
_UNIT_MS = {"millisecond": 1, "second": 1_000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000}

# The example transforms moved from the top-level ``spark_jobs`` package into this distribution.
_OLD_JOBS_PACKAGE, _JOBS_PACKAGE = "spark_jobs", "airflow_provider_eos.jobs"

# Keys this package owns; setting them in the shared client config would contradict the spec.
_RESERVED_KAFKA_KEYS = {
    "transactional.id": "transactional ids are derived from transactional_id_prefix; remove the key "
    "and set transactional_id_prefix",
    "group.id": "the sink group is the spec's group_id and no live consumer may join it; remove the "
    "key and set group_id",
}


def _parse_interval_ms(text: str) -> int | None:
    match = _INTERVAL_RE.fullmatch(text.strip())
    if match is None:
        return None
    return int(match.group(1)) * _UNIT_MS[match.group(2).lower()]


def _check_topic(value: str, field: str) -> str:
    if not isinstance(value, str) or not _TOPIC_RE.fullmatch(value) or value in {".", ".."}:
        raise ValueError(
            f"{field} {value!r} is not a valid Kafka topic name; use 1-249 characters from "
            "[A-Za-z0-9._-], not '.' or '..'"
        )
    return value


class PipelineSpec(BaseModel):
    """One exactly-once Kafka -> Spark -> Kafka pipeline.

    Build it in Python (``PipelineSpec(name=..., ...)``), from a mapping (:meth:`from_dict`) or
    from a file (:meth:`load`). Any invalid value raises :class:`SpecError` naming the field.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Pipeline name; DAG and task ids derive from it.
    name: str
    #: librdkafka client config shared by source, sink and admin; must hold ``bootstrap.servers``.
    kafka: dict[str, str | int | bool]
    #: Topics the Spark Kafka source subscribes to.
    input_topics: list[str]
    #: Topic the sink produces to, transactionally.
    output_topic: str
    #: Optional dead-letter topic, produced to in the same transaction.
    dlq_topic: str | None = None
    #: The sink group: holds the offsets committed inside transactions, with batch markers.
    group_id: str
    #: Prefix of the sink's transactional ids (``<prefix>-<writer index>``).
    transactional_id_prefix: str
    #: Spark checkpoint location: a local path or an fsspec URL (``s3a://`` is read as ``s3://``).
    checkpoint_location: str
    #: ``"available_now"`` or a processing-time interval such as ``"10 seconds"``.
    trigger: str = TRIGGER_AVAILABLE_NOW
    #: Spark ``maxOffsetsPerTrigger``; ``None`` for no limit.
    max_offsets_per_trigger: int | None = 10000
    #: Spark ``startingOffsets``: ``"earliest"``, ``"latest"`` or a JSON ``{"topic":{"0":42}}``.
    starting_offsets: str = "earliest"
    #: Producer ``transaction.timeout.ms`` of the sink.
    transaction_timeout_ms: int = 60000
    #: ``"module:function"`` applied to the input DataFrame; ``None`` passes rows through.
    transform: str | None = None
    #: Extra Spark configuration for the job.
    spark_conf: dict[str, str] = {}
    #: Expected longest batch duration, checked against the transaction timeout before start.
    batch_budget_ms: int | None = None
    #: Delivery guarantee of the sink.
    mode: Mode = Mode.EXACTLY_ONCE

    # -- field validation (pydantic runs these in field order, so later fields see earlier ones) --

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _NAME_RE.fullmatch(value):
            raise ValueError(
                f"name {value!r} is not identifier-like; use 1-64 characters from [A-Za-z0-9_-], "
                "starting with a letter or '_'"
            )
        return value

    @field_validator("max_offsets_per_trigger", "transaction_timeout_ms", "batch_budget_ms", mode="before")
    @classmethod
    def _reject_bool(cls, value: Any, info: ValidationInfo) -> Any:
        # pydantic's lax mode turns `true` into 1, which would hide a YAML slip in a timeout.
        if isinstance(value, bool):
            raise ValueError(f"{info.field_name} is {value!r}; use an integer")
        return value

    @field_validator("kafka", mode="before")
    @classmethod
    def _check_kafka_types(cls, value: Any) -> Any:
        # Checked before pydantic's union validation, which would report one error per union member.
        if isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ValueError(f"kafka key {key!r} is not a string; quote it")
                if not isinstance(item, str | int | bool):
                    raise ValueError(
                        f"kafka[{key!r}] is {item!r} ({type(item).__name__}); librdkafka values are "
                        "strings, integers or booleans, so quote it"
                    )
        return value

    @field_validator("kafka")
    @classmethod
    def _check_kafka(cls, value: dict[str, str | int | bool]) -> dict[str, str | int | bool]:
        for key in value:
            if not key or key != key.strip():
                raise ValueError(f"kafka key {key!r} is empty or has surrounding spaces")
            if key in _RESERVED_KAFKA_KEYS:
                raise ValueError(f"kafka must not set {key!r}: {_RESERVED_KAFKA_KEYS[key]}")
        servers = value.get("bootstrap.servers")
        if not isinstance(servers, str) or not servers.strip():
            raise ValueError(
                f"kafka['bootstrap.servers'] is {servers!r}; set it to the broker list, e.g. 'localhost:9092'"
            )
        return value

    @field_validator("input_topics")
    @classmethod
    def _check_input_topics(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("input_topics is empty; list at least one topic to read")
        for topic in value:
            _check_topic(topic, "input topic")
        duplicates = sorted({t for t in value if value.count(t) > 1})
        if duplicates:
            raise ValueError(f"input_topics lists {duplicates} more than once; list each topic once")
        return value

    @field_validator("output_topic")
    @classmethod
    def _check_output_topic(cls, value: str, info: ValidationInfo) -> str:
        _check_topic(value, "output_topic")
        if value in (info.data.get("input_topics") or []):
            raise ValueError(
                f"output_topic {value!r} is also an input topic; a pipeline reading its own output "
                "loops forever, so choose a different output_topic"
            )
        return value

    @field_validator("dlq_topic")
    @classmethod
    def _check_dlq_topic(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        _check_topic(value, "dlq_topic")
        if value == info.data.get("output_topic"):
            raise ValueError(
                f"dlq_topic {value!r} equals output_topic; dead letters must not mix with output, "
                "so choose a separate dlq_topic (or omit it)"
            )
        if value in (info.data.get("input_topics") or []):
            raise ValueError(
                f"dlq_topic {value!r} is also an input topic; choose a dlq_topic the pipeline does not read"
            )
        return value

    @field_validator("group_id")
    @classmethod
    def _check_group_id(cls, value: str) -> str:
        if not value.strip() or value != value.strip():
            raise ValueError(
                f"group_id {value!r} is empty or has surrounding spaces; set a group name used only "
                "by this pipeline's sink"
            )
        return value

    @field_validator("transactional_id_prefix")
    @classmethod
    def _check_prefix(cls, value: str) -> str:
        try:
            return transactional_ids.validate_prefix(value)
        except EosError as err:
            raise ValueError(f"{err.message}; {err.fix}") from err

    @field_validator("checkpoint_location")
    @classmethod
    def _check_checkpoint_location(cls, value: str) -> str:
        if not value.strip() or value != value.strip():
            raise ValueError(
                f"checkpoint_location {value!r} is empty or has surrounding spaces; set a durable "
                "path or URL owned by this pipeline, e.g. 's3a://bucket/checkpoints/orders'"
            )
        return value

    @field_validator("trigger")
    @classmethod
    def _check_trigger(cls, value: str) -> str:
        if value != TRIGGER_AVAILABLE_NOW and _parse_interval_ms(value) is None:
            raise ValueError(
                f"trigger {value!r} is neither 'available_now' nor an interval; use 'available_now' "
                "or '<number> <unit>' with unit milliseconds, seconds, minutes, hours or days, "
                "e.g. '10 seconds'"
            )
        return value

    @field_validator("max_offsets_per_trigger", "batch_budget_ms")
    @classmethod
    def _check_positive_or_none(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and value <= 0:
            raise ValueError(f"{info.field_name} is {value}; use a positive integer or null")
        return value

    @field_validator("transaction_timeout_ms")
    @classmethod
    def _check_positive(cls, value: int, info: ValidationInfo) -> int:
        if value <= 0:
            raise ValueError(f"{info.field_name} is {value}; use a positive number of milliseconds")
        return value

    @field_validator("starting_offsets")
    @classmethod
    def _check_starting_offsets(cls, value: str, info: ValidationInfo) -> str:
        if value in ("earliest", "latest"):
            return value
        example = '\'{"orders":{"0":42,"1":-2}}\''
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(
                f"starting_offsets {value!r} is not 'earliest', 'latest' or JSON; use one of those, e.g. {example}"
            ) from None
        if not isinstance(parsed, dict) or not parsed:
            raise ValueError(f"starting_offsets {value!r} must be a JSON object of topics, e.g. {example}")
        inputs = info.data.get("input_topics") or []
        for topic, partitions in parsed.items():
            if inputs and topic not in inputs:
                raise ValueError(
                    f"starting_offsets names topic {topic!r}, which is not in input_topics {inputs}; "
                    "list only input topics"
                )
            if not isinstance(partitions, dict) or not partitions:
                raise ValueError(
                    f"starting_offsets[{topic!r}] is {partitions!r}; use an object of partition -> "
                    f"offset, e.g. {example}"
                )
            for partition, offset in partitions.items():
                if not partition.isdecimal() or isinstance(offset, bool) or not isinstance(offset, int):
                    raise ValueError(
                        f"starting_offsets[{topic!r}][{partition!r}] = {offset!r}; partitions are "
                        "decimal strings and offsets integers (-2 earliest, -1 latest)"
                    )
                if offset < -2:
                    raise ValueError(
                        f"starting_offsets[{topic!r}][{partition!r}] = {offset}; use an offset >= 0, "
                        "-2 for earliest or -1 for latest"
                    )
        return value

    @field_validator("transform")
    @classmethod
    def _check_transform(cls, value: str | None) -> str | None:
        if value is not None and not _TRANSFORM_RE.fullmatch(value):
            raise ValueError(
                f"transform {value!r} is not 'module:function'; use e.g. "
                f"'{_JOBS_PACKAGE}.transforms.json_enrich:transform', or null for identity"
            )
        if value is not None and value.split(":")[0].split(".")[0] == _OLD_JOBS_PACKAGE:
            moved = _JOBS_PACKAGE + value.removeprefix(_OLD_JOBS_PACKAGE)
            raise ValueError(
                f"transform {value!r} names the package {_OLD_JOBS_PACKAGE!r}, which moved into this "
                f"distribution; use {moved!r}"
            )
        return value

    @field_validator("spark_conf", mode="before")
    @classmethod
    def _stringify_spark_conf(cls, value: Any) -> Any:
        # YAML turns `spark.sql.shuffle.partitions: 4` into an int; Spark conf values are strings,
        # and Spark spells booleans in lower case.
        if not isinstance(value, Mapping):
            return value
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(item, bool):
                out[key] = "true" if item else "false"
            elif isinstance(item, int | float):
                out[key] = str(item)
            else:
                out[key] = item
        return out

    # -- derived values -----------------------------------------------------------------------

    @property
    def trigger_interval_ms(self) -> int | None:
        """The processing-time interval in milliseconds; ``None`` for ``available_now``."""
        if self.trigger == TRIGGER_AVAILABLE_NOW:
            return None
        return _parse_interval_ms(self.trigger)

    def transactional_id(self, writer_index: int = 0) -> str:
        """The transactional id of writer ``writer_index`` (``0``: the driver-mode producer)."""
        return transactional_ids.transactional_id(self.transactional_id_prefix, writer_index)

    # -- construction and serialization --------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str | None = None) -> PipelineSpec:
        """Validate a mapping into a spec.

        :param data: the spec's fields.
        :param source: where ``data`` came from (a file name), named in errors.
        :raises SpecError: naming every invalid field, its value and the fix.
        """
        where = f" in {source}" if source else ""
        if not isinstance(data, Mapping):
            raise SpecError(
                f"pipeline spec{where} is a {type(data).__name__}, not a mapping of fields",
                fix="write the spec as a mapping (YAML keys or a JSON object) of field: value",
            )
        try:
            return cls.model_validate(dict(data))
        except ValidationError as err:
            raise _translate(err, data, source) from None

    @classmethod
    def load(cls, path: str | Path) -> PipelineSpec:
        """Read a spec from a ``.yaml``, ``.yml`` or ``.json`` file.

        :raises SpecError: naming the file if it is missing, unreadable, malformed or invalid.
        """
        file = Path(path)
        if file.suffix.lower() not in SPEC_SUFFIXES:
            raise SpecError(
                f"spec file {str(file)!r} has suffix {file.suffix!r}; pipeline specs are YAML or JSON",
                fix=f"name the file with one of {', '.join(SPEC_SUFFIXES)}",
            )
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SpecError(
                f"spec file {str(file)!r} does not exist",
                fix="check the path (relative paths resolve against the current directory)",
            ) from None
        except (OSError, UnicodeDecodeError) as err:
            raise SpecError(
                f"spec file {str(file)!r} cannot be read: {err}",
                fix="check the file's permissions and that it is UTF-8 text",
            ) from None
        try:
            data = json.loads(text) if file.suffix.lower() == ".json" else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as err:
            raise SpecError(
                f"spec file {str(file)!r} is not valid {'JSON' if file.suffix.lower() == '.json' else 'YAML'}: {err}",
                fix="fix the syntax at the position given above",
            ) from None
        if data is None:
            raise SpecError(
                f"spec file {str(file)!r} is empty",
                fix="write the pipeline's fields into it, or remove it",
            )
        return cls.from_dict(data, source=str(file))

    def to_dict(self) -> dict[str, Any]:
        """Every field (defaults included) as plain JSON-compatible values; :meth:`from_dict` inverts it."""
        return self.model_dump(mode="json")

    def to_json(self, *, indent: int | None = None) -> str:
        """The spec as JSON; :meth:`from_dict` of ``json.loads`` of it gives an equal spec."""
        return json.dumps(self.to_dict(), indent=indent)

    def with_overrides(self, **overrides: Any) -> PipelineSpec:
        """A new, fully validated spec with some fields replaced.

        :raises SpecError: if an override names an unknown field or breaks validation.
        """
        return type(self).from_dict({**self.to_dict(), **overrides}, source=f"overrides of {self.name!r}")


def _render_loc(loc: tuple[int | str, ...]) -> str:
    if not loc:
        return "(spec)"
    head, *rest = loc
    path = str(head)
    for part in rest:
        # Keys like 'bootstrap.servers' contain dots, so brackets keep the path unambiguous.
        path += f"[{part}]" if isinstance(part, int) else f"[{part!r}]"
    return path


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _translate(err: ValidationError, data: Mapping[str, Any], source: str | None) -> SpecError:
    allowed = list(PipelineSpec.model_fields)
    problems: list[str] = []
    fixes: list[str] = []
    for item in err.errors(include_url=False):
        loc = tuple(item["loc"])
        path = _render_loc(loc)
        kind = item["type"]
        if kind == "extra_forbidden":
            field = str(loc[0]) if loc else "?"
            close = difflib.get_close_matches(field, allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"{path}: unknown field{hint}; allowed fields: {', '.join(allowed)}")
            fixes.append(f"remove or rename {field!r}")
        elif kind == "missing":
            problems.append(f"{path}: required field is missing")
            fixes.append(f"add {path}")
        elif kind == "value_error":
            # Our validators write "<what is wrong>; <fix>"; the value is named inside.
            message = str(item["msg"]).removeprefix("Value error, ")
            problems.append(f"{path}: {message}")
        else:
            expected = str(item["msg"])
            problems.append(f"{path}: {expected}, got {_short(item.get('input'))}")
            fixes.append(f"give {path} a value of the expected type")
    name = data.get("name") if isinstance(data.get("name"), str) else None
    what = f"pipeline spec {name!r}" if name else "pipeline spec"
    where = f" ({source})" if source else ""
    message = f"{what}{where} is invalid:\n" + "\n".join(f"  - {p}" for p in problems)
    fix = "; ".join(["correct each field as its line above says", *dict.fromkeys(fixes)])
    return SpecError(message, fix=fix)


def is_spec_file_name(name: str) -> bool:
    """Whether a file called ``name`` in a specs folder is read as a pipeline spec.

    Only ``.yaml``, ``.yml`` and ``.json`` files; hidden files (``.orders.yaml``, vim's swap
    files) and editor leftovers (emacs's ``#orders.yaml#`` and ``orders.yaml~``) are not,
    because a stale copy of a spec would otherwise count as a second pipeline.
    """
    if name.startswith((".", "#")) or name.endswith(("~", "#")):
        return False
    return Path(name).suffix.lower() in SPEC_SUFFIXES


def load_spec_files(directory: str | Path) -> dict[Path, PipelineSpec]:
    """The one scanner of a specs folder: ``{spec file: spec}`` for every spec file, sorted by file name.

    Files :func:`is_spec_file_name` rejects are skipped; subdirectories are not searched. The DAGs
    (through :mod:`airflow_provider_eos.spec_registry`), ``eos preflight`` and the pre-flight's
    sharing rules all read a folder through this function.

    :raises SpecError: if the folder does not exist, naming the file of the first invalid spec,
        or both files of a duplicated pipeline name.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise SpecError(
            f"spec directory {str(folder)!r} does not exist or is not a directory",
            fix="point to the folder holding the pipeline spec files",
        )
    specs: dict[Path, PipelineSpec] = {}
    seen: dict[str, Path] = {}
    for file in sorted(folder.iterdir()):
        if not is_spec_file_name(file.name) or not file.is_file():
            continue
        spec = PipelineSpec.load(file)
        if spec.name in seen:
            raise SpecError(
                f"pipeline name {spec.name!r} is used by both {str(seen[spec.name])!r} and {str(file)!r}",
                fix="give every pipeline a unique name (DAG ids derive from it)",
            )
        seen[spec.name] = file
        specs[file] = spec
    return specs


def load_specs(directory: str | Path) -> list[PipelineSpec]:
    """Every spec in ``directory``, sorted by file name (see :func:`load_spec_files`).

    :raises SpecError: as :func:`load_spec_files`.
    """
    return list(load_spec_files(directory).values())
