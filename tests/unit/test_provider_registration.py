"""The provider as Airflow finds it: the entry point, get_provider_info, and Airflow's ProvidersManager.

``make compat-airflow`` runs this on every tested Airflow (the schema and the manager's discovery are
Airflow's, and change between its versions).
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

import pytest

import airflow_provider_eos

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_home")]


def _modules(info: dict, kind: str) -> list[str]:
    return [module for entry in info[kind] for module in entry["python-modules"]]


def test_the_entry_point_names_get_provider_info() -> None:
    (point,) = [p for p in entry_points(group="apache_airflow_provider") if p.value.startswith("airflow_provider_eos")]
    assert point.load() is airflow_provider_eos.get_provider_info


def test_the_providers_manager_lists_the_package_at_its_version() -> None:
    from airflow.providers_manager import ProvidersManager

    provider = ProvidersManager().providers["airflow-provider-eos"]
    assert provider.version == airflow_provider_eos.__version__
    assert provider.data["name"] == airflow_provider_eos.get_provider_info()["name"]


@pytest.mark.parametrize("kind", ["hooks", "operators", "sensors", "triggers"])
def test_every_module_the_provider_names_imports_on_this_airflow(kind: str) -> None:
    modules = _modules(airflow_provider_eos.get_provider_info(), kind)
    assert modules
    for module in modules:
        importlib.import_module(module)


def test_the_providers_manager_knows_the_eos_config_section() -> None:
    from airflow.providers_manager import ProvidersManager

    configs = dict(ProvidersManager().provider_configs)
    assert "specs_dir" in configs["airflow-provider-eos"]["eos"]["options"]


def test_the_providers_manager_registers_the_submit_tasks_links() -> None:
    from airflow.providers_manager import ProvidersManager

    links = airflow_provider_eos.get_provider_info()["extra-links"]
    assert links == ["airflow_provider_eos.operators.application_links.SparkUiLink",
                     "airflow_provider_eos.operators.application_links.SparkApplicationLink"]
    # The manager imports each class and keeps only those that are operator links.
    assert set(links) <= set(ProvidersManager().extra_links_class_names)

