"""``python -m bench --render``: rewrites a committed run's report, into ``--out`` when given."""

from __future__ import annotations

from pathlib import Path

from bench.__main__ import main

COMMITTED = Path(__file__).resolve().parents[2] / "bench" / "results" / "2026-11-28.json"


def test_render_writes_into_out_and_leaves_the_committed_results_alone(tmp_path: Path) -> None:
    committed = {path.name: path.stat().st_mtime_ns for path in COMMITTED.parent.iterdir()}

    assert main(["--render", str(COMMITTED), "--out", str(tmp_path)]) == 0

    written = sorted(path.name for path in tmp_path.iterdir())
    assert written == ["2026-11-28.json", "2026-11-28.md", "2026-11-28.png", "LATEST.md"]
    assert "# Benchmarks 2026-11-28" in (tmp_path / "LATEST.md").read_text()
    assert {path.name: path.stat().st_mtime_ns for path in COMMITTED.parent.iterdir()} == committed
