"""The one scanner of a specs folder (core) and where the DAGs and ``eos preflight`` find the folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos import spec_registry
from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.spec import is_spec_file_name, load_spec_files, load_specs


def write(folder: Path, file_name: str, name: str, **fields: Any) -> Path:
    data = {
        "name": name,
        "kafka": {"bootstrap.servers": "localhost:9092"},
        "input_topics": [f"{name}-in"],
        "output_topic": f"{name}-out",
        "group_id": f"{name}-sink",
        "transactional_id_prefix": f"{name}-eos",
        "checkpoint_location": f"/var/lib/eos/checkpoints/{name}",
        **fields,
    }
    path = folder / file_name
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("file_name", "is_spec"),
    [
        ("orders.yaml", True),
        ("orders.yml", True),
        ("orders.JSON", True),
        (".orders.yaml", False),  # hidden
        (".orders.yaml.swp", False),  # vim's swap file
        ("#orders.yaml#", False),  # emacs's auto-save file
        (".#orders.yaml", False),  # emacs's lock link
        ("orders.yaml~", False),  # editor backup
        ("orders.yaml.bak", False),
        ("README.md", False),
    ],
)
def test_which_file_names_are_specs(file_name: str, is_spec: bool) -> None:
    assert is_spec_file_name(file_name) is is_spec


def test_the_scanner_maps_files_to_specs_and_skips_hidden_files_and_editor_leftovers(tmp_path: Path) -> None:
    orders = write(tmp_path, "orders.json", "orders")
    clicks = write(tmp_path, "clicks.json", "clicks")
    # Stale copies of a spec under the same pipeline name: read, they would be a duplicate.
    write(tmp_path, ".orders.json", "orders")
    write(tmp_path, "orders.json~", "orders")
    write(tmp_path, "#orders.json#", "orders")
    (tmp_path / "nested").mkdir()
    write(tmp_path / "nested", "deep.json", "deep")

    found = load_spec_files(tmp_path)

    assert {path: spec.name for path, spec in found.items()} == {clicks: "clicks", orders: "orders"}
    assert list(found) == [clicks, orders]  # sorted by file name
    assert [spec.name for spec in load_specs(tmp_path)] == ["clicks", "orders"]


def test_a_duplicate_pipeline_name_is_refused_naming_both_files(tmp_path: Path) -> None:
    first = write(tmp_path, "a.json", "orders")
    second = write(tmp_path, "b.json", "orders", output_topic="elsewhere")
    with pytest.raises(SpecError) as info:
        load_spec_files(tmp_path)
    assert str(first) in info.value.message and str(second) in info.value.message
    assert "'orders'" in info.value.message and info.value.fix


def test_the_dags_registry_uses_the_scanner(tmp_path: Path) -> None:
    orders = write(tmp_path, "orders.json", "orders")
    write(tmp_path, ".orders-old.json", "orders")  # hidden: once read, and the last file silently won
    assert spec_registry.discover_specs(tmp_path) == {"orders": orders}


SECRET = "hunter2-secret"


def test_an_invalid_spec_is_skipped_and_reported_and_the_healthy_pipelines_stay(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One bad file must not take every pipeline's DAGs (recovery included) down with it (issue 23)."""
    clicks = write(tmp_path, "clicks.json", "clicks")
    orders = write(tmp_path, "orders.json", "orders")
    (tmp_path / "broken.yaml").write_text(f"name: broken\nkafka:\n  sasl.password: {SECRET}: x\n")
    (tmp_path / "mistyped.yaml").write_text(f"name: mistyped\nkafka: {{sasl.password: [{SECRET}]}}\n")

    with caplog.at_level("ERROR", logger="airflow_provider_eos.spec_registry"):
        found = spec_registry.discover(tmp_path)

    assert found.specs == {"clicks": clicks, "orders": orders}
    assert spec_registry.discover_specs(tmp_path) == found.specs
    assert list(found.invalid) == ["broken.yaml", "mistyped.yaml"]
    assert "line 3, column" in found.invalid["broken.yaml"]
    assert "kafka['sasl.password']" in found.invalid["mistyped.yaml"]
    for text in (caplog.text, found.invalid_md(), *found.invalid.values()):
        assert SECRET not in text
    assert "broken.yaml" in caplog.text and "mistyped.yaml" in caplog.text
    assert "`broken.yaml`" in found.invalid_md() and "`mistyped.yaml`" in found.invalid_md()
    with pytest.raises(SpecError) as info:
        found.raise_if_invalid()
    assert "broken.yaml" in str(info.value) and "mistyped.yaml" in str(info.value) and SECRET not in str(info.value)


def test_a_pipeline_name_in_two_files_skips_both_and_names_them(tmp_path: Path) -> None:
    write(tmp_path, "orders.json", "orders")
    write(tmp_path, "orders-copy.json", "orders")
    clicks = write(tmp_path, "clicks.json", "clicks")
    found = spec_registry.discover(tmp_path)
    assert found.specs == {"clicks": clicks}
    assert set(found.invalid) == {"orders.json", "orders-copy.json"}
    assert all("used by both" in reason for reason in found.invalid.values())


def test_a_healthy_folder_reports_nothing(tmp_path: Path) -> None:
    write(tmp_path, "orders.json", "orders")
    found = spec_registry.discover(tmp_path)
    assert found.invalid == {} and found.invalid_md() == ""
    found.raise_if_invalid()


def test_a_missing_folder_holds_no_pipelines_for_the_dags(tmp_path: Path) -> None:
    assert spec_registry.discover_specs(tmp_path / "nope") == {}


def test_eos_specs_dir_names_the_folder_everywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(spec_registry.SPECS_DIR_ENV, raising=False)
    assert spec_registry.configured_specs_directory() is None
    assert spec_registry.specs_directory(tmp_path / "default") == (tmp_path / "default").resolve()

    monkeypatch.setenv(spec_registry.SPECS_DIR_ENV, str(tmp_path / "specs"))
    assert spec_registry.configured_specs_directory() == (tmp_path / "specs").resolve()
    assert spec_registry.specs_directory(tmp_path / "default") == (tmp_path / "specs").resolve()
