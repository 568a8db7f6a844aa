"""The soak's timeline (soak/chart.py): the data each panel is drawn from, and the PNG it writes."""

from __future__ import annotations

from pathlib import Path

from soak.chart import HIT_COLORS, chart, failed, fault_marks, phase_series


def _phase(mode: str = "exactly-once", duplicates: int = 0) -> dict:
    return {"label": "driver", "mode": mode, "wall_s": 60, "progress": [(1.0, 100), (30.0, 400)],
            "checks": {"output": {"duplicates": duplicates, "lost": 0}},
            "faults": [{"kind": "kill_driver", "fault_s": 10.0, "applied": True, "open_transaction": True},
                       {"kind": "pause_broker", "fault_s": 20.0, "applied": True, "open_transaction": False},
                       {"kind": "slow_transaction", "fault_s": 99.0, "applied": False},
                       {"kind": "restart_broker"}]}


def test_faults_are_marked_by_what_they_hit_and_clipped_to_the_phase() -> None:
    assert fault_marks(_phase()) == [(10.0, "KD", "open"), (20.0, "PB", "none"), (60.0, "ST", "skipped")]
    assert len(set(HIT_COLORS.values())) == 3


def test_the_rate_series_covers_the_phase_in_buckets() -> None:
    starts, rates, bucket = phase_series(_phase())
    assert bucket == 2.0 and starts[:2] == [0.0, 2.0] and len(starts) == len(rates) == 31
    assert rates[0] == 50.0 and rates[15] == 200.0  # 100 rows in [0, 2) s, 400 rows in [30, 32) s


def test_only_an_exactly_once_phase_with_duplicates_or_losses_is_a_failure() -> None:
    assert failed(_phase(duplicates=1)) and not failed(_phase())
    assert not failed(_phase("at-least-once", duplicates=5)), "the control is expected to duplicate"


def test_the_timeline_is_a_png(tmp_path: Path) -> None:
    chart({"seed": 1, "verdict": "PASS", "wall_s": 120, "phases": [_phase(), _phase("at-least-once", 5)]},
          tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
