"""The PNG chart of one bench run's results (3 x 3 panels, drawn by :mod:`bench.png`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.png import Canvas, bar_panel
from bench.ratios import SPARK_LETTERS, mode_key
from bench.report_writers import EOS_LATENCY_MODES, is_writers_format


def eos_latency(results: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The exactly-once latency the p99 target applies to: the executor writers' when measured."""
    lat = results.get("latency") or {}
    for mode in EOS_LATENCY_MODES:
        if (lat.get(mode) or {}).get("latency_ms"):
            return mode, lat[mode]
    return "exactly-once", None


def chart(results: dict[str, Any], path: Path) -> None:
    canvas = Canvas(1260, 1116)
    meta = results["meta"]
    canvas.text(12, 8, f"AIRFLOW-PROVIDER-EOS BENCHMARKS {meta['date']}  LOAD 1M {meta['load_summary']}", scale=2)
    w, h, pad = 410, 350, 10
    cells = [(pad + col * (w + pad), 36 + row * (h + pad)) for row in range(3) for col in range(3)]
    tp = results.get("throughput") or {}
    modes = tp.get("modes") or {}

    def kilo(s: dict[str, Any] | None) -> tuple[float | None, float | None, float | None]:
        if not s or s.get("median") is None:
            return None, None, None
        return s["median"] / 1000, s["min"] / 1000, s["max"] / 1000

    if is_writers_format(tp):
        raw = ((modes.get("a") or {}).get("records_per_s") or {}).get("median")
        bar_panel(canvas, *cells[0], w, h, "K REC/S" + (f" (A RAW {raw / 1000:.0f})" if raw else ""),
                  [(f"{letter.replace('_', '').upper()}{cores}",
                    *kilo((modes.get(mode_key(letter, cores)) or {}).get("records_per_s")))
                   for cores in tp["cores"] for letter in SPARK_LETTERS])
        ratios = tp.get("ratios") or {}
        bar_panel(canvas, *cells[1], w, h, "RATIOS (CE/B 1, CE/N .8)",
                  [(f"{k.split('@')[0].replace('_', '').upper()}{k.split('@')[1]}", ratios.get(k), None, None)
                   for k in (f"{name}@{c}" for name in ("c_e/b", "c_e/n", "c_d/b") for c in tp["cores"])],
                  target=1.0, target_label="1.0")
    else:
        bar_panel(canvas, *cells[0], w, h, "THROUGHPUT K REC/S",
                  [(label, *kilo((modes.get(key) or {}).get("records_per_s")))
                   for key, label in (("a", "A RAW TXN"), ("b", "B ALO JOB"), ("c", "C EOS JOB"))])
        ratios = tp.get("ratios") or {}
        bar_panel(canvas, *cells[1], w, h, "RATIOS (TARGET C/B 1, C/A .5)",
                  [(k.upper(), ratios.get(k), None, None) for k in ("c/b", "c/a", "b/a")], target=1.0,
                  target_label="1.0")
    lat = results.get("latency") or {}
    bars = []
    for mode, short in (("exactly-once executors", "CE"), ("exactly-once driver", "CD"), ("exactly-once", "EOS"),
                        ("at-least-once", "B")):
        la = (lat.get(mode) or {}).get("latency_ms")
        if la:
            bars += [(f"{short} P{q}", la[f"p{q}"], None, None) for q in (50, 95, 99)]
    eos_lat = eos_latency(results)[1] or {}
    bar_panel(canvas, *cells[2], w, h, "LATENCY MS", bars,
              target=(eos_lat.get("trigger_ms") or 1000) + 1000, target_label="TRIGGER+1S")
    rec = results.get("recovery") or {}

    def triple(s: dict[str, Any] | None) -> tuple[float | None, float | None, float | None]:
        return (None, None, None) if not s or s.get("median") is None else (s["median"], s["min"], s["max"])

    bar_panel(canvas, *cells[3], w, h, "RECOVERY S",
              [("ABORT", *triple(rec.get("abort_s"))), ("VERIFY", *triple(rec.get("verify_s"))),
               ("RUN->OUT", *triple(rec.get("restart_to_first_output_s"))), ("TOTAL", *triple(rec.get("seconds")))],
              target=60, target_label="60 S")
    sc = results.get("scale") or {}
    ver = (sc.get("verification") or {}).get("scenarios") or {}
    txn = sc.get("transactions") or {}
    live = sc.get("preflight_live") or {}
    bar_panel(canvas, *cells[4], w, h, "SCALE MS (10K PARTITIONS)",
              [("VERIFY", *triple((ver.get("KAFKA_BEHIND") or {}).get("verify_checkpoint_ms"))),
               ("RENDER", *triple((ver.get("KAFKA_BEHIND") or {}).get("render_ms"))),
               ("LINGER", *triple(txn.get("find_lingering_ms"))), ("PLAN", *triple(txn.get("plan_abort_ms"))),
               ("PF LIVE", *triple(live.get("gather_facts_ms")))])
    mem = results.get("memory") or {}
    if mem.get("sizes"):
        bar_panel(canvas, *cells[5], w, h, "DRIVER RSS MB (PY+JVM)",
                  [(f"{label[:4].upper()} {size // 1000}K",
                    (((mem["writers"].get(label) or {}).get(str(size)) or {}).get("peak_rss_mb") or {}).get("total"),
                    None, None) for label in ("driver", "executors") for size in mem["sizes"]])
    else:
        _memory_panel(canvas, cells[5], w, h, mem)
    _control_panels(canvas, cells[6], cells[7], w, h, results.get("control") or {})
    # Local cores when the throughput table ran on two masters, else the standalone cluster's 1 -> 2 workers.
    scale_up, title = tp.get("scaling") or {}, "SCALING 1 TO 2 CORES"
    if not scale_up and (results.get("cluster") or {}).get("scaling"):
        scale_up, title = results["cluster"]["scaling"], "SCALING 1 TO 2 WORKERS"
    bar_panel(canvas, *cells[8], w, h, title,
              [(letter.replace("_", "").upper(), (scale_up.get(letter) or {}).get("of_medians"), None, None)
               for letter in SPARK_LETTERS if letter in scale_up or not scale_up], target=2.0, target_label="2X")
    canvas.save(path)


def _memory_panel(canvas: Canvas, cell: tuple[int, int], w: int, h: int, mem: dict[str, Any]) -> None:
    bar_panel(canvas, *cell, w, h, "PEAK RSS MB, ONE BATCH",
              [("EOS PY", ((mem.get("exactly-once") or {}).get("peak_rss_mb") or {}).get("driver_python"), None, None),
               ("ALO PY", ((mem.get("at-least-once") or {}).get("peak_rss_mb") or {}).get("driver_python"), None, None),
               ("EOS JVM", ((mem.get("exactly-once") or {}).get("peak_rss_mb") or {}).get("jvm"), None, None),
               ("ALO JVM", ((mem.get("at-least-once") or {}).get("peak_rss_mb") or {}).get("jvm"), None, None)])


def _control_panels(canvas: Canvas, left: tuple[int, int], right: tuple[int, int], w: int, h: int,
                    control: dict[str, Any]) -> None:
    """Markers per 1,000 records and records/s of the control-record runs, per shape and batch size."""
    markers, rates = [], []
    for shape, data in (control.get("shapes") or {}).items():
        for batch, by_key in data["batches"].items():
            name = f"{shape} {int(batch) // 1000}K"
            for key, s in by_key.items():
                letter = key.split("@")[0].replace("_", "").upper()
                value = (s.get("markers_per_1000_records") or {}).get("median")
                if value is not None and letter == "CE":
                    markers.append((name, value, None, None))
                if letter == "CE":
                    rate = (s.get("records_per_s") or {}).get("median")
                    rates.append((name, None if rate is None else rate / 1000, None, None))
    bar_panel(canvas, *left, w, h, "CE MARKERS / 1000 RECORDS", markers)
    bar_panel(canvas, *right, w, h, "CE K REC/S BY SHAPE, BATCH", rates)
