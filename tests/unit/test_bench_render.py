"""``python -m bench --render``: rewrites a committed run's report, into ``--out`` when given."""

from __future__ import annotations

from pathlib import Path

from bench.__main__ import main, result_stem

COMMITTED = Path(__file__).resolve().parents[2] / "bench" / "results" / "2026-11-28.json"


def test_render_writes_into_out_and_leaves_the_committed_results_alone(tmp_path: Path) -> None:
    committed = {path.name: path.stat().st_mtime_ns for path in COMMITTED.parent.iterdir()}

    assert main(["--render", str(COMMITTED), "--out", str(tmp_path)]) == 0

    written = sorted(path.name for path in tmp_path.iterdir())
    assert written == ["2026-11-28.json", "2026-11-28.md", "2026-11-28.png", "LATEST.md"]
    assert "# Benchmarks 2026-11-28" in (tmp_path / "LATEST.md").read_text()
    assert {path.name: path.stat().st_mtime_ns for path in COMMITTED.parent.iterdir()} == committed


def test_a_later_run_of_the_day_keeps_its_own_stem_and_the_others_are_named_by_date() -> None:
    meta = {"date": "2026-11-29", "quick": False, "selected": ["throughput", "cluster"]}
    assert result_stem(meta, full=True) == "2026-11-29"
    assert result_stem(meta, full=False) == "2026-11-29-throughput-cluster"
    assert result_stem({**meta, "quick": True}, full=False) == "2026-11-29-quick"
    assert result_stem({**meta, "stem": "2026-11-29-0651"}, full=True) == "2026-11-29-0651"
