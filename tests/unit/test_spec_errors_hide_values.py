"""Reading a spec never echoes a value: errors name the file, line, column and key (issue 23).

The DAGs parse every spec at import, so an error's text reaches Airflow's import errors and
logs: a YAML snippet or a value's repr there would publish a password.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.spec import PipelineSpec

SECRET = "hunter2-secret"
HEAD = "name: orders\n"
TAIL = """input_topics: [orders-in]
output_topic: orders-out
group_id: orders-sink
transactional_id_prefix: orders-eos
checkpoint_location: /tmp/checkpoints/orders
"""


def load_error(tmp_path: Path, text: str, name: str = "orders.yaml") -> SpecError:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        PipelineSpec.load(path)
    return info.value


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"  sasl.password: {SECRET}: oops\n", "line 4, column"),  # a second ':' on the line
        (f'  sasl.password: "{SECRET}\n', "line 4, column"),  # an unclosed quote
        (f"\tsasl.password: {SECRET}\n", "line 4, column 1"),  # a tab indent
        (f"  sasl.password: *{SECRET}\n", "line 4, column"),  # an unquoted value starting with '*'
        (f"  sasl.password: !{SECRET}\n", "line 4, column"),  # ... or with '!'
    ],
)
def test_a_yaml_syntax_error_names_file_line_column_and_key_not_the_value(tmp_path, line, expected) -> None:
    text = HEAD + "kafka:\n  bootstrap.servers: b:9092\n" + line + TAIL
    error = load_error(tmp_path, text)
    message = str(error)
    assert "orders.yaml" in message and expected in message and "sasl.password" in message, message
    assert SECRET not in message and SECRET not in repr(error), message
    assert SECRET[2:-2] not in message
    assert len(message) < 1000


@pytest.mark.parametrize(
    ("block", "key", "line"),
    [
        (f"kafka:\n  bootstrap.servers: b:9092\n  sasl.password: [{SECRET}]\n", "kafka['sasl.password']", 4),
        (f"kafka:\n  bootstrap.servers: b:9092\n  sasl.password: {{v: {SECRET}}}\n", "kafka['sasl.password']", 4),
        (f"kafka: bootstrap.servers=b:9092 sasl.password={SECRET}\n", "kafka", 2),
        ("kafka: {bootstrap.servers: 'b:9092'}\nspark_conf:\n"
         f"  spark.hadoop.fs.azure.account.key.eosdata.dfs.core.windows.net: [{SECRET}]\n",
         "spark_conf['spark.hadoop.fs.azure.account.key.eosdata.dfs.core.windows.net']", 4),
        ("kafka: {bootstrap.servers: 'b:9092'}\ncheckpoint_location: [" + SECRET + "]\n", "checkpoint_location", 3),
    ],
)
def test_a_mistyped_value_names_the_key_and_its_line_not_the_value(tmp_path, block, key, line) -> None:
    own_location = "checkpoint_location" in block
    tail = TAIL.replace("checkpoint_location: /tmp/checkpoints/orders\n", "") if own_location else TAIL
    message = str(load_error(tmp_path, HEAD + block + tail))
    assert f"{key} (line {line}, column " in message and "orders.yaml" in message, message
    assert SECRET not in message, message


def test_a_mistyped_value_in_json_names_the_key_not_the_value(tmp_path) -> None:
    data = {"name": "orders", "kafka": {"bootstrap.servers": "b:9092", "sasl.password": [SECRET]},
            "input_topics": ["orders-in"], "output_topic": "o", "group_id": "g", "transactional_id_prefix": "p",
            "checkpoint_location": "/tmp/c"}
    message = str(load_error(tmp_path, json.dumps(data, indent=2), "orders.json"))
    assert "kafka['sasl.password']" in message and "orders.json" in message and SECRET not in message, message


def test_credentials_in_a_url_value_are_not_echoed(tmp_path) -> None:
    text = (HEAD + "kafka: {bootstrap.servers: 'b:9092'}\n" + TAIL
            + f"connector: {{jars: ['https://deploy:{SECRET}@repo.example.com/k.jar']}}\n"
            + f"python_environment: 'https://{SECRET}@repo.example.com/env.zip'\n")
    message = str(load_error(tmp_path, text))
    assert "connector" in message and "python_environment" in message and SECRET not in message, message


def test_an_alias_bomb_is_refused_at_once_with_a_short_message(tmp_path) -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)]
    text = "\n".join(lines) + "\nname: *i\nkafka: *i\nspark_conf: {x: *i}\n"
    started = time.monotonic()
    error = load_error(tmp_path, text)
    assert time.monotonic() - started < 1
    message = str(error)
    assert "orders.yaml" in message and "alias" in message and len(message) < 1000, message


def test_a_self_referencing_alias_and_deep_nesting_are_refused(tmp_path) -> None:
    assert "orders.yaml" in str(load_error(tmp_path, "name: &a [*a]\n"))
    message = str(load_error(tmp_path, "name: " + "[" * 5000 + "]" * 5000 + "\n"))
    assert "nest" in message and len(message) < 1000, message


def test_a_huge_file_is_refused_without_parsing(tmp_path) -> None:
    message = str(load_error(tmp_path, HEAD + "spark_conf:\n" + "".join(f"  k{i}: v\n" for i in range(20000))))
    assert "orders.yaml" in message and "KiB" in message, message


def test_messages_are_bounded_when_everything_is_wrong(tmp_path) -> None:
    topics = ", ".join(f"'bad topic {i} {'x' * 300}'" for i in range(60))
    message = str(load_error(tmp_path, HEAD + "kafka: {bootstrap.servers: 'b:9092'}\n" + TAIL.replace(
        "[orders-in]", f"[{topics}]") + "spark_conf: {" + ", ".join(f"k{i}: [1]" for i in range(300)) + "}\n"))
    assert len(message) < 6000 and "more problem" in message, len(message)
