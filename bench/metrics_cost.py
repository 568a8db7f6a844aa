"""``python -m bench.metrics_cost``: what the driver's metrics cost a running job (docs/observability.md).

Paired, interleaved runs of the executor writers (``c_e@2``, the default writer) over the same
input: without ``metrics``, and with ``metrics: {prometheus_port: P}`` (the sink's exporter and
Spark's own streaming metrics and Prometheus endpoint) while a scraper reads both endpoints every
second, as Prometheus would. Reported per variant: the median over repetitions of the steady-state
batch time (without batch 0), the records per second, and the CPU microseconds per record of all
the job's processes; and the ratios with/without. Writes ``bench/results/<date>-metrics.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Any

from airflow_provider_eos.core.metrics.spark_conf import SPARK_PROMETHEUS_PATH
from airflow_provider_eos.devstack.broker_config import free_port
from bench.measure import log
from bench.throughput import job_run, prepare_input

RESULTS = Path(__file__).resolve().parent / "results"
KEY = "c_e@2"


class _Scraper(threading.Thread):
    """GETs each URL every ``interval_s`` until stopped; counts the scrapes that answered."""

    def __init__(self, urls: list[str], interval_s: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.urls, self.interval_s = urls, interval_s
        self.answered = {url: 0 for url in urls}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.interval_s):
            for url in self.urls:
                try:
                    with urllib.request.urlopen(url, timeout=2) as response:
                        response.read()
                    self.answered[url] += 1
                except OSError:
                    pass  # the driver is not serving yet, or has stopped


def _steady_batch_ms(outcome: dict[str, Any]) -> float | None:
    rate = outcome.get("after_first_batch_records_per_s")
    return None if not rate else round(1000 * (outcome["records"] / outcome["batches"]) / rate, 1)


def run(bootstrap: str, work_dir: Path, *, records: int, batch: int, repetitions: int) -> dict[str, Any]:
    data = prepare_input(bootstrap, records)
    variants: dict[str, list[dict[str, Any]]] = {"without": [], "with": []}
    for rep in range(repetitions):
        for variant in ("without", "with"):
            metrics = None
            scraper = None
            spark_conf = None
            if variant == "with":
                port, ui_port = free_port(), free_port()
                metrics = {"prometheus_port": port, "prometheus_host": "127.0.0.1"}
                spark_conf = {"spark.ui.port": str(ui_port)}
                scraper = _Scraper([f"http://127.0.0.1:{port}/metrics",
                                    f"http://127.0.0.1:{ui_port}{SPARK_PROMETHEUS_PATH}"])
                scraper.start()
            log(f"metrics cost rep {rep + 1}/{repetitions}: {variant} the exporter")
            try:
                outcome = job_run(bootstrap, work_dir, data, KEY, batch, rep, 600 + records / 500,
                                  metrics=metrics, spark_conf=spark_conf)
            finally:
                if scraper is not None:
                    scraper.stop.set()
                    scraper.join(5)
            outcome["steady_batch_ms"] = _steady_batch_ms(outcome)
            outcome["scrapes"] = scraper.answered if scraper else {}
            variants[variant].append(outcome)
            log(f"  {outcome['after_first_batch_records_per_s']} rec/s steady, batch {outcome['steady_batch_ms']} ms, "
                f"{outcome.get('cpu_steady_us_per_record')} CPU us/record, scrapes {outcome['scrapes']}")
    summary = {}
    for variant, runs in variants.items():
        summary[variant] = {figure: statistics.median(r[figure] for r in runs if r.get(figure))
                            for figure in ("steady_batch_ms", "after_first_batch_records_per_s",
                                           "cpu_steady_us_per_record", "cpu_us_per_record")
                            if any(r.get(figure) for r in runs)}
    ratios = {figure: round(summary["with"][figure] / summary["without"][figure], 3)
              for figure in summary["without"] if figure in summary["with"]}
    return {"records": records, "batch": batch, "repetitions": repetitions, "mode": KEY, "summary": summary,
            "with_over_without": ratios, "runs": variants}


def main() -> None:
    from airflow_provider_eos.devstack.broker import LocalKafka
    from airflow_provider_eos.devstack.jars import KAFKA_VERSION, kafka_version_argument

    parser = argparse.ArgumentParser(prog="python -m bench.metrics_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--batch", type=int, default=30_000)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--kafka-version", type=kafka_version_argument, default=KAFKA_VERSION, metavar="X.Y.Z",
                        help=f"the broker's Kafka version (default {KAFKA_VERSION})")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="eos-bench-metrics-") as folder:
        work_dir = Path(folder)
        kafka = LocalKafka(work_dir / "kafka")
        try:
            bootstrap = kafka.up(kafka_version=args.kafka_version).bootstrap_servers
            result = {"kafka": args.kafka_version, **run(bootstrap, work_dir, records=args.records, batch=args.batch,
                                                         repetitions=args.repetitions)}
        finally:
            kafka.down()
    out = RESULTS / f"{dt.date.today().isoformat()}-metrics.json"
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    log(f"with/without the exporter: {result['with_over_without']} -> {out}")


if __name__ == "__main__":
    main()
