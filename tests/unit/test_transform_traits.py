"""The stateful_transform marker: at run time, read from source without Spark, and gathered for pre-flight."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.preflight import CheckpointFacts, PreflightError, PreflightFacts
from airflow_provider_eos.core.spec import PipelineSpec, Writers
from airflow_provider_eos.core.transform_traits import (
    STATEFUL_ATTRIBUTE,
    TransformTraits,
    is_stateful_transform,
    stateful_transform,
    traits_from_source,
)
from airflow_provider_eos.core.writers_choice import WritersChoice, record_writers_choice
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.preflight import read_transform_traits, with_writers_facts
from tests.support.checkpoints import write_checkpoint

FRAUD = "spark_jobs.transforms.fraud_alerts:transform"
ENRICH = "spark_jobs.transforms.json_enrich:transform"
QUERY = "0b5c3e1a-8d2f-4e6a-9c1b-7f3e5a2d4c60"

# -- at run time ----------------------------------------------------------------------------------


def test_the_decorator_marks_the_function_and_returns_it() -> None:
    def transform(frame: object) -> object:
        return frame

    marked = stateful_transform(transform)
    assert marked is transform and marked("x") == "x"
    assert getattr(transform, STATEFUL_ATTRIBUTE) is True
    assert is_stateful_transform(transform)


def test_an_unmarked_function_is_not_stateful() -> None:
    assert not is_stateful_transform(lambda frame: frame)
    assert not is_stateful_transform(print)


# -- from source ----------------------------------------------------------------------------------

SOURCES = [
    ("@stateful_transform\ndef transform(frame):\n    return frame\n", True),
    ("import x\n@x.traits.stateful_transform\ndef transform(frame):\n    return frame\n", True),
    ("@stateful_transform()\ndef transform(frame):\n    return frame\n", True),
    ("@other\ndef transform(frame):\n    return frame\n", False),
    ("def transform(frame):\n    return frame\n", False),
    ("def _impl(frame):\n    return frame\ntransform = stateful_transform(_impl)\n", True),
    # The last top-level binding wins, as when the module runs.
    ("@stateful_transform\ndef transform(frame):\n    return frame\ndef transform(frame):\n    return frame\n", False),
]


@pytest.mark.parametrize(("source", "stateful"), SOURCES)
def test_the_marker_is_read_from_the_module_source(source: str, stateful: bool) -> None:
    traits = traits_from_source("m:transform", source, "m.py")
    assert traits is not None and traits.stateful is stateful
    assert traits.reference == "m:transform"
    assert traits.evidence == f"transform in m.py: {'@stateful_transform' if stateful else 'no @stateful_transform'}"


@pytest.mark.parametrize(
    "source",
    [
        "from elsewhere import transform\n",  # imported: only importing tells
        "transform = make_transform()\n",  # built at run time
        "def other(frame):\n    return frame\n",  # not there at all
        "def transform(:\n",  # does not parse
        "class C:\n    @stateful_transform\n    def transform(self, frame):\n        return frame\n",  # not top level
    ],
)
def test_what_the_source_cannot_tell_is_unknown(source: str) -> None:
    assert traits_from_source("m:transform", source, "m.py") is None


def test_the_example_transforms_say_what_they_are() -> None:
    fraud = read_transform_traits(FRAUD)
    assert fraud.stateful and fraud.evidence.endswith("fraud_alerts.py: @stateful_transform")
    enrich = read_transform_traits(ENRICH)
    assert not enrich.stateful and "json_enrich.py" in enrich.evidence
    assert read_transform_traits(None) == TransformTraits(reference=None, stateful=False,
                                                          evidence="the identity transform")


def test_reading_the_traits_does_not_import_the_transform_or_spark() -> None:
    # A fresh interpreter: the test session has pyspark loaded already.
    script = textwrap.dedent(
        f"""
        import sys
        from airflow_provider_eos.usecases.preflight import read_transform_traits
        assert read_transform_traits({FRAUD!r}).stateful
        loaded = sorted(m for m in sys.modules if m.startswith("pyspark") or m.endswith("fraud_alerts"))
        assert not loaded, loaded
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr


def test_a_transform_that_cannot_be_read_says_why() -> None:
    with pytest.raises(PreflightError, match="'no_such_module_eos' is not importable"):
        read_transform_traits("no_such_module_eos:transform")
    with pytest.raises(PreflightError, match="not defined at the top level"):
        read_transform_traits("spark_jobs.transforms.json_enrich:no_such_function")
    with pytest.raises(PreflightError, match="cannot be read"):
        read_transform_traits("no_such_package_eos.sub:transform")


# -- gathered for pre-flight ----------------------------------------------------------------------


def spec_for(checkpoint: Path, **fields: object) -> PipelineSpec:
    return PipelineSpec.from_dict({
        "name": "orders",
        "kafka": {"bootstrap.servers": "b:9092"},
        "input_topics": ["orders-in"],
        "output_topic": "orders-out",
        "group_id": "orders-sink",
        "transactional_id_prefix": "orders-eos",
        "checkpoint_location": str(checkpoint),
        **fields,
    })


def facts_for(spec: PipelineSpec, exists: bool = True) -> PreflightFacts:
    return PreflightFacts(spec=spec, checkpoint=CheckpointFacts(spec.checkpoint_location, exists, QUERY, 0, 0))


def test_the_writers_facts_are_the_checkpoint_record_and_the_transform_traits(tmp_path: Path) -> None:
    root = write_checkpoint(tmp_path / "ck", topic="orders-in", partitions=2, query_id=QUERY, offsets=[0],
                            commits=[0])
    spec = spec_for(root, writers="driver", transform=FRAUD)
    choice = WritersChoice(writers=Writers.EXECUTORS, requested=Writers.AUTO, reason="plan is partition-aligned",
                           query_id=QUERY, batch_id=0, decided_at=dt.datetime(2026, 11, 20, tzinfo=dt.UTC))
    record_writers_choice(CheckpointReader(str(root)), choice)

    facts = with_writers_facts(facts_for(spec), PipelineClients(spec))
    assert facts.checkpoint is not None and facts.checkpoint.writers_choice == choice
    assert facts.transform_traits is not None and facts.transform_traits.stateful
    assert dict(facts.unavailable) == {}


def test_unreadable_writers_facts_are_recorded_as_unavailable(tmp_path: Path) -> None:
    root = write_checkpoint(tmp_path / "ck", topic="orders-in", partitions=2, query_id=QUERY, offsets=[0],
                            commits=[0])
    (root / "eos").mkdir()
    (root / "eos" / "writers.json").write_text("{not json")
    spec = spec_for(root, transform="no_such_module_eos:transform")
    facts = with_writers_facts(facts_for(spec), PipelineClients(spec))
    assert facts.checkpoint is not None and facts.checkpoint.writers_choice is None
    assert facts.transform_traits is None
    assert "writers.json" in facts.unavailable["writers_choice"]
    assert "no_such_module_eos" in facts.unavailable["transform_traits"]


def test_no_checkpoint_means_no_record_to_read(tmp_path: Path) -> None:
    spec = spec_for(tmp_path / "none")
    facts = with_writers_facts(facts_for(spec, exists=False), PipelineClients(spec))
    assert facts.checkpoint == CheckpointFacts(spec.checkpoint_location, False, QUERY, 0, 0)
    assert facts.transform_traits == TransformTraits(reference=None, stateful=False, evidence="the identity transform")
    assert dict(facts.unavailable) == {}
