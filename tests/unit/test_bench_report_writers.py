"""The bench report renders the writers' throughput, ratios, scaling, control records and targets (bench/report.py)."""

from __future__ import annotations

from pathlib import Path

from bench.measure import summarize
from bench.ratios import label, ratios, scaling, split_key
from bench.report import analyze, chart, evaluate_targets, markdown

LOAD = {"1m": 1.0, "5m": 1.0, "15m": 1.0}


def _run(rate: float, **extra: object) -> dict:
    return {"records_per_s": rate, "mb_per_s": rate * 200 / 1e6, "seconds": 100_000 / rate, "records": 100_000,
            "loadavg_before": LOAD, "after_first_batch_records_per_s": rate * 1.1, **extra}


def _eos_run(rate: float, cores: int) -> dict:
    seconds = 100_000 / rate
    return _run(rate, sink_ms_total={"collect_ms": 0, "produce_ms": 100, "commit_ms": 10}, rows_out=100_000,
                tasks_ms_total=seconds * 600, task_ms_total={"produce_ms": seconds * 500 * cores, "commit_ms": 40},
                markers_per_batch=16.0)


def _throughput() -> dict:
    rates = {"a": [200_000.0] * 3, "b@1": [10_000.0] * 3, "n@1": [16_000.0] * 3, "c_d@1": [8_000.0] * 3,
             "c_e@1": [11_000.0, 9_000.0, 10_500.0], "b@2": [18_000.0] * 3, "n@2": [30_000.0] * 3,
             "c_d@2": [9_000.0] * 3, "c_e@2": [17_000.0, 18_500.0, 16_000.0]}
    runs = {}
    for key, values in rates.items():
        letter, cores = split_key(key)
        runs[key] = [_eos_run(v, cores or 1) if letter.startswith("c") else _run(v) for v in values]
    runs["c_d@1"][1] = None  # a failed run is left out
    summary = {key: {"label": label(key), "letter": split_key(key)[0], "cores": split_key(key)[1],
                     "records_per_s": summarize([r["records_per_s"] for r in items if r], 1),
                     "mb_per_s": summarize([r["mb_per_s"] for r in items if r], 3),
                     "seconds": summarize([r["seconds"] for r in items if r], 3), "runs": items}
               for key, items in runs.items()}
    found = ratios(summary, runs, (1, 2))
    steady = ratios({k: {"after_first_batch_records_per_s": summarize(
        [r["after_first_batch_records_per_s"] for r in items if r], 1)} for k, items in runs.items()},
        runs, (1, 2), "after_first_batch_records_per_s")
    return {"input": {"topic_partitions": 4, "records": 100_000, "bytes": 20_000_000, "avg_record_bytes": 200.0,
                      "max_offsets_per_trigger": 25_000},
            "timing_basis": "sum of triggerExecution", "cores": [1, 2], "repetitions": 3, "order": list(rates),
            "modes": summary, "ratios": found["of_medians"], "paired_ratios": found["paired"],
            "steady_ratios": steady["of_medians"], "steady_paired_ratios": steady["paired"],
            "scaling": scaling(summary, runs, 1, 2),
            "failures": [{"mode": "c_d@1", "repetition": 2, "error": "RuntimeError: boom\nmore"}]}


def _control() -> dict:
    def entry(rate: float, markers: float, bound: int | None) -> dict:
        run = {"records_per_s": rate, "after_first_batch_records_per_s": rate * 1.2, "markers_per_batch": markers,
               "transactions_per_batch": 4.0,
               "markers_per_1000_records": markers / 10, "batches": 4, "bound_per_batch": bound}
        from bench.control_records import summarize_runs

        return summarize_runs([run])

    return {"records": 40_000, "batch_sizes": [10_000], "master": "local[2]", "repetitions": 1, "failures": [],
            "shapes": {"4x4": {"input_partitions": 4, "output_partitions": 4,
                               "batches": {"10000": {"c_e@2": entry(9_000.0, 16.0, 16),
                                                     "c_d@2": entry(8_000.0, 4.0, 16),
                                                     "b@2": entry(10_000.0, 0.0, None)}}}}}


def _results() -> dict:
    latency = {"mode": "exactly-once executors", "writers": "executors", "trigger_ms": 1000, "rate_per_s": 500,
               "duration_s": 15, "achieved_rate_per_s": 500.0, "records": 7500, "loadavg_before": LOAD,
               "latency_ms": {"p50": 900.0, "p95": 1500.0, "p99": 1800.0, "max": 2000.0, "mean": 950.0},
               "latency_ms_after_first_5s": {"p99": 1700.0}, "batches": 10,
               "batch_ms": {"median": 700, "min": 600, "max": 900, "n": 10, "values": []},
               "batches_longer_than_trigger": 0.1, "rows_per_batch": {"median": 500},
               "sink_ms_median": {"collect_ms": 0, "produce_ms": 200, "commit_ms": 30}, "tasks_ms_median": 300}
    return {"meta": {"date": "2026-11-30", "quick": True, "command": "python -m bench --quick", "started": "s",
                     "finished": "f", "duration_min": 5.0, "machine": "2 cores", "versions": "v", "kafka": "4.1.1",
                     "load_summary": "1.00 to 1.00", "git_commit": "abc"},
            "throughput": _throughput(), "control": _control(),
            "latency": {"exactly-once executors": latency,
                        "at-least-once": {**latency, "mode": "at-least-once", "writers": None,
                                          "latency_ms": {**latency["latency_ms"], "p99": 1600.0}}},
            "cluster": {"scaling": {"b": {"of_medians": 1.5}, "c_e": {"of_medians": 1.6}}}}


def test_targets_cover_both_ratios_on_both_masters_and_p99_of_the_executor_writers() -> None:
    results = _results()
    targets = {t["key"]: t for t in evaluate_targets(results)}
    assert targets["c_e/b@1"]["value"] == 1.05 and targets["c_e/b@1"]["pass"] is True
    assert targets["c_e/b@2"]["value"] == round(17_000 / 18_000, 3) and targets["c_e/b@2"]["pass"] is False
    assert targets["c_e/n@2"]["pass"] is False  # 17,000 / 30,000
    assert targets["c_e/n@1"]["value"] == round(10_500 / 16_000, 3)
    assert targets["p99"]["pass"] is True and "exactly-once executors" in targets["p99"]["note"]
    assert targets["p99"]["measured"] == "1,800 ms (limit 1,850 ms)"  # at-least-once's 1,600 + 250
    assert targets["scaling"]["pass"] is True and targets["scaling"]["measured"] == "1.60x (b 1.50x)"


def test_markdown_shows_modes_ratios_scaling_control_and_where_the_time_goes(tmp_path: Path) -> None:
    results = _results()
    results["targets"] = evaluate_targets(results)
    results["analysis"] = analyze(results)
    text = markdown(results)
    assert ("| (c_e) exactly-once, executor writers (in the executor JVM, the default), local[2] "
            "| 16,000 / 17,000 / 18,500 |") in text
    assert "| (n) noop sink (Spark alone, writes nothing), local[1] |" in text
    assert "| c_e/b (target >= 1.0) | **1.05** (0.90 / 1.05 / 1.10) | **0.94** (0.89 / 0.94 / 1.03) |" in text
    assert "| c_e/b without batch 0 (no target; warm-up left out) | 1.05 (0.90 / 1.05 / 1.10) |" in text
    assert "c_e 1.62 (per repetition" in text  # scaling of the executor writers, 17,000 / 10,500
    assert "Failed runs (left out of the statistics): c_d@1 rep 2: RuntimeError: boom." in text
    assert "| 4x4 | 10,000 | c_e@2 | 9,000 / 9,000 / 9,000 | 10,800 | 4 | 4 | 16 (16) | 1.6 |" in text
    assert "**local[2]: c_e/b = 0.94 (miss), c_e/n = 0.57 (miss).**" in text
    assert "the write job (the JVM writer's data-source write" in text and "What would close it" in text
    assert ("- **control records (no target).** 4x4: batch 10,000: 1.6 markers per 1,000 records, c_e 10,800 rec/s "
            "without batch 0, c_e/b 0.90, c_e/c_d 1.12") in text
    chart(results, tmp_path / "chart.png")  # the chart's own tests: tests/unit/test_bench_chart.py
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_targets_hold_in_steady_state_too_and_cpu_per_record_is_a_target() -> None:
    results = _results()
    tp = results["throughput"]
    for key, cpu in {"b@1": 20.0, "c_e@1": 21.0, "b@2": 20.0, "c_e@2": 30.0}.items():
        tp["modes"][key]["cpu_us_per_record"] = summarize([cpu], 2)
    targets = {t["key"]: t for t in evaluate_targets(results)}
    assert targets["c_e/b@1:steady"]["target"] == "c_e/b on local[1] in steady state (without batch 0) >= 1.0"
    assert targets["c_d/b@2"]["pass"] is False and targets["c_d/b@2"]["value"] == 0.5  # 9,000 / 18,000 < 0.8
    assert targets["cpu:c_e/b@1"]["pass"] is True and targets["cpu:c_e/b@1"]["measured"] == "1.05"
    assert targets["cpu:c_e/b@2"]["pass"] is False and "30.0 vs 20.0" in targets["cpu:c_e/b@2"]["note"]
    text = markdown({**results, "targets": list(targets.values()), "analysis": analyze(results)})
    assert ("| (c_e) exactly-once, executor writers (in the executor JVM, the default), local[2] "
            "| 30.0 / - | 1.50 / - |") in text


def test_the_mixed_headers_input_has_its_own_section_and_targets() -> None:
    results = _results()
    mixed = _throughput()
    mixed["input"]["headers_every"] = 10
    results["throughput_mixed_headers"] = mixed
    targets = {t["key"]: t for t in evaluate_targets(results)}
    assert targets["c_e/b@2:headers"]["target"] == "c_e/b on local[2] >= 1.0 (a header on every 10th)"
    text = markdown({**results, "targets": list(targets.values()), "analysis": analyze(results)})
    assert "## Throughput, input with a header on every 10th record" in text


def test_the_ratio_targets_hold_on_the_clusters_two_workers_too() -> None:
    from bench.report_writers import cluster_ratio_targets

    cluster = {"ratios": {"c_e/b@2": 1.02, "c_e/n@2": 0.8, "c_d/b@2": None, "c_e/b@1": 0.5},
               "paired_ratios": {"c_e/b@2": {"n": 3, "min": 0.95, "median": 1.01, "max": 1.1}}}
    rows = {row["key"]: row for row in cluster_ratio_targets(cluster)}
    assert set(rows) == {"cluster:c_e/b@2", "cluster:c_e/n@2", "cluster:c_d/b@2"}
    assert rows["cluster:c_e/b@2"]["pass"] is True and "0.95 / 1.01 / 1.10" in rows["cluster:c_e/b@2"]["note"]
    assert rows["cluster:c_e/n@2"]["pass"] is False
    assert rows["cluster:c_d/b@2"]["pass"] is None and rows["cluster:c_d/b@2"]["measured"] == "-"
    assert cluster_ratio_targets({}) == []


def test_the_clusters_targets_hold_in_steady_state_and_with_headers_too() -> None:
    from bench.cluster import markdown as cluster_markdown

    def mode(letter: str, total: float, steady: float) -> dict:
        return {"letter": letter, "workers": 2, "description": letter,
                "records_per_s": {"min": total, "median": total, "max": total},
                "after_first_batch_records_per_s": {"median": steady},
                "runs": [{"after_first_batch_records_per_s": steady}]}

    plain = {"ratios": {"c_e/b@2": 1.02}, "steady_ratios": {"c_e/b@2": 0.97}, "paired_ratios": {},
             "steady_paired_ratios": {}}
    headers = {"ratios": {"c_e/b@2": 0.99}, "steady_ratios": {"c_e/b@2": 1.01}, "headers_every": 10,
               "records": 1000, "max_offsets_per_trigger": 100, "repetitions": 1, "master": "standalone",
               "modes": {"b@2": mode("b", 100.0, 150.0), "c_e@2": mode("c_e", 99.0, 151.5)}, "scaling": {}}
    rows = {t["key"]: t for t in evaluate_targets({"cluster": plain, "cluster_mixed_headers": headers})}
    assert rows["cluster:c_e/b@2"]["pass"] is True and rows["cluster:c_e/b@2:steady"]["pass"] is False
    assert rows["cluster:c_e/b@2:steady"]["target"] == (
        "c_e/b on the standalone cluster, 2 workers in steady state (without batch 0) >= 1.0")
    assert rows["cluster:c_e/b@2:headers"]["pass"] is False and rows["cluster:c_e/b@2:steady:headers"]["pass"]
    assert rows["cluster:c_e/b@2:headers"]["target"].endswith("(a header on every 10th)")
    table = "\n".join(cluster_markdown(headers))
    assert "| (c_e) c_e | 2 | 99 / 99 / 99 | 152 |" in table  # the steady column, rounded
    assert "c_e/b without batch 0: 1.01 at 2 worker(s)." in table and "Scaling" not in table


def test_the_cpu_table_shows_the_brokers_cpu_beside_the_jobs_when_it_was_sampled() -> None:
    from bench.report_machine import cpu_lines

    def mode(label_: str, job: float, broker: float | None) -> dict:
        figures = {"cpu_us_per_record": {"median": job}, "cpu_steady_us_per_record": {"median": job * 0.9}}
        if broker is not None:
            figures |= {"broker_cpu_us_per_record": {"median": broker},
                        "broker_cpu_steady_us_per_record": {"median": broker * 0.8}}
        return {"label": label_, **figures}

    sampled = {"modes": {"n@2": mode("(n) noop", 40.0, 1.5), "b@2": mode("(b) Spark", 60.0, 20.0),
                         "c_e@2": mode("(c_e) eos", 63.0, 21.0)}}
    table = "\n".join(cpu_lines(sampled))
    assert "broker CPU µs/record (all / steady) |" in table
    assert "| (c_e) eos | 63.0 / 56.7 | 1.05 / 1.05 | 21.0 / 16.8 |" in table
    assert "| (n) noop | 40.0 / 36.0 | 0.67 / 0.67 | 1.5 / 1.2 |" in table
    # Older results (no broker sampled): the table keeps its three columns.
    older = {"modes": {k: mode(v["label"], v["cpu_us_per_record"]["median"], None)
                       for k, v in sampled["modes"].items()}}
    assert "broker" not in "\n".join(cpu_lines(older)) and "| (b) Spark | 60.0 / 54.0 | 1.00 / 1.00 |" in "\n".join(
        cpu_lines(older))
