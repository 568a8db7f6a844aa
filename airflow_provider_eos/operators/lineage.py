"""The submit task's lineage as Airflow 3 and OpenLineage expect it (topics: :mod:`airflow_provider_eos.core.lineage`).

- Assets: the task's inlets are the input topics of the folder's pipelines (``kafka://`` URIs, the
  apache-kafka provider's scheme); its outlet is the alias :data:`~airflow_provider_eos.core.lineage.OUTPUTS_ALIAS`,
  to which a successful run attaches its own pipeline's output and dead-letter topics, so an asset
  event says which topic got new data, and a DAG scheduled on a topic runs for that pipeline only.
- OpenLineage: the task's facets name the chosen pipeline's input and output topics (namespace
  ``kafka://<bootstrap server>``), read by the openlineage provider's listener when it is installed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, AssetAlias

from airflow_provider_eos.core.lineage import OUTPUTS_ALIAS, pipeline_lineage
from airflow_provider_eos.core.spec import PipelineSpec

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage
    from airflow.sdk import Context

__all__ = ["announce_outputs", "openlineage_facets", "submit_lineage"]


def submit_lineage(spec_files: Iterable[Path]) -> dict[str, list[Any]]:
    """The submit task's ``inlets`` (every pipeline's input topics) and ``outlets`` (the outputs' alias)."""
    inputs: dict[str, Asset] = {}
    for spec_file in spec_files:
        for dataset in pipeline_lineage(PipelineSpec.load(spec_file)).inputs:
            inputs.setdefault(dataset.uri, Asset(uri=dataset.uri))
    return {"inlets": list(inputs.values()), "outlets": [AssetAlias(OUTPUTS_ALIAS)]}


def announce_outputs(context: Context, spec: PipelineSpec, outlets: Iterable[Any]) -> None:
    """Attach the pipeline's output topics to the task's outputs alias, if it declares it (its run succeeded)."""
    alias = next((outlet for outlet in outlets if isinstance(outlet, AssetAlias) and outlet.name == OUTPUTS_ALIAS),
                 None)
    if alias is None:
        return
    for dataset in pipeline_lineage(spec).outputs:
        context["outlet_events"][alias].add(Asset(uri=dataset.uri), extra={"pipeline": spec.name})


def openlineage_facets(spec: PipelineSpec) -> OperatorLineage:
    """The OpenLineage inputs and outputs of one run of ``spec``."""
    from airflow.providers.common.compat.openlineage.facet import Dataset
    from airflow.providers.openlineage.extractors import OperatorLineage

    lineage = pipeline_lineage(spec)
    return OperatorLineage(inputs=[Dataset(namespace=d.namespace, name=d.topic) for d in lineage.inputs],
                           outputs=[Dataset(namespace=d.namespace, name=d.topic) for d in lineage.outputs])
