"""``repr()`` and ``str()`` of the spec and the objects holding its settings never show a secret (issue 23).

A repr ends up in tracebacks, debug logs, assertion messages and Airflow's task logs.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from airflow_provider_eos.core.spec import PipelineSpec, scan_spec_folder
from airflow_provider_eos.core.spec.document import read_spec_document
from airflow_provider_eos.usecases.clients import PipelineClients

SASL_PASSWORD = "sasl-pw-0c4f1d"
AZURE_SECRET = "YXp1cmUta2V5LTBjNGY="
REPO_PASSWORD = "repo-pw-7e21"
FIELDS = {
    "name": "orders",
    "kafka": {"bootstrap.servers": "b:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
              "sasl.username": "svc", "sasl.password": SASL_PASSWORD},
    "input_topics": ["orders-in"], "output_topic": "orders-out", "group_id": "orders-sink",
    "transactional_id_prefix": "orders-eos",
    "checkpoint_location": "abfss://checkpoints@eosdata.dfs.core.windows.net/orders",
    "spark_conf": {"spark.hadoop.fs.azure.account.key.eosdata.dfs.core.windows.net": AZURE_SECRET,
                   "spark.jars.repositories": f"https://deploy:{REPO_PASSWORD}@repo.example.com/maven2",
                   "spark.executor.memory": "1g"},
}
SECRETS = (SASL_PASSWORD, AZURE_SECRET, REPO_PASSWORD)


def shown(obj: object) -> str:
    return f"{obj!r} {obj!s} {obj}"


def test_the_spec_repr_and_str_show_no_secret_but_the_rest() -> None:
    spec = PipelineSpec.from_dict(FIELDS)
    text = shown(spec)
    assert not [secret for secret in SECRETS if secret in text], text
    assert "b:9093" in text and "'sasl.username': 'svc'" in text and "'spark.executor.memory': '1g'" in text
    assert "abfss://checkpoints@eosdata.dfs.core.windows.net/orders" in text
    # The spec itself still holds them: the job needs them.
    assert spec.kafka["sasl.password"] == SASL_PASSWORD and AZURE_SECRET in spec.to_json()


def test_the_objects_holding_a_spec_or_its_settings_show_no_secret(tmp_path: Path) -> None:
    path = tmp_path / "orders.yaml"
    path.write_text(yaml.safe_dump(FIELDS))
    document = read_spec_document(path)
    folder = scan_spec_folder(tmp_path)
    clients = PipelineClients(PipelineSpec.load(path), storage_options={"account_key": AZURE_SECRET,
                                                                         "account_name": "eosdata"})
    for obj in (document, folder, clients):
        text = shown(obj)
        assert not [secret for secret in SECRETS if secret in text], text
    assert "eosdata" in repr(clients)
