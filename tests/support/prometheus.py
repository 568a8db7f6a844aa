"""A real Prometheus (Debian's package) on 127.0.0.1 for one test: its targets, the package's rules, its HTTP API."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from airflow_provider_eos.devstack.broker_config import free_port

#: The rules and the dashboard as the wheel ships them.
OBSERVABILITY = files("airflow_provider_eos") / "observability"
RULES = Path(str(OBSERVABILITY / "prometheus-rules.yml"))
DASHBOARD = Path(str(OBSERVABILITY / "grafana-dashboard.json"))


def used_metrics() -> set[str]:
    """The ``eos_`` metric names the rules' expressions and the dashboard's queries use."""
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [rule["expr"] for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]
    exprs += [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    exprs += [var["definition"] for var in dashboard["templating"]["list"] if "definition" in var]
    return set(re.findall(r"\beos_[a-z_]+", " ".join(exprs)))


@dataclass(frozen=True)
class Target:
    """One scrape job: ``host:port`` and the path of its metrics."""

    job: str
    address: str
    path: str = "/metrics"


class PrometheusApi:
    """Prometheus's HTTP API (``/api/v1``)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}{query}", timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        """An instant query's vector: ``[{"metric": {...}, "value": [time, "value"]}, ...]``."""
        return self.get("query", query=expr)["result"]

    def series_names(self, prefix: str) -> set[str]:
        """Every metric name Prometheus stored that starts with ``prefix``."""
        return {name for name in self.get("label/__name__/values") if name.startswith(prefix)}

    def alerts(self) -> list[dict]:
        return self.get("alerts")["alerts"]

    def targets_up(self) -> dict[str, str]:
        """Each scrape job's health (``up``, ``down``, ``unknown``)."""
        return {t["labels"]["job"]: t["health"] for t in self.get("targets")["activeTargets"]}


@contextmanager
def prometheus(folder: Path, targets: list[Target], *, rules: Path = RULES) -> Iterator[PrometheusApi]:
    """Prometheus scraping ``targets`` every second and evaluating ``rules`` every second; stopped at the end."""
    binary = shutil.which("prometheus")
    assert binary, "Prometheus is not installed: `make system` installs Debian's `prometheus` package"
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [{"job_name": t.job, "metrics_path": t.path, "static_configs": [{"targets": [t.address]}]}
                           for t in targets],
    }
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    with (folder / "prometheus.log").open("w") as log:
        process = subprocess.Popen(
            [binary, f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={folder / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}", "--web.enable-lifecycle"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    api = PrometheusApi(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (folder / "prometheus.log").read_text()
            try:
                api.get("status/buildinfo")
                break
            except OSError:
                assert time.monotonic() < deadline, (folder / "prometheus.log").read_text()
                time.sleep(0.3)
        yield api
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
