"""The reward plot and its rolling mean."""

from __future__ import annotations

from pathlib import Path

from pipeline.learn.report import plot, rolling, version_number, version_table_sql


def test_rolling_mean_uses_the_window_it_has() -> None:
    assert rolling([1.0, 0.0, 1.0, 1.0], 2) == [1.0, 0.5, 0.5, 1.0]


def test_version_numbers_and_the_table_query() -> None:
    assert version_number("3") == 3 and version_number("tiny-1") is None and version_number(None) is None
    sql = version_table_sql("o'hara-")
    assert "LIKE 'o''hara-%'" in sql and "GROUP BY s.model_version" in sql


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pts = [
        {"at_s": 100.0 + i, "policy_version": str(i // 10), "reward": float(i % 3 == 0)} for i in range(40)
    ]
    out = plot({"live": pts, "control": [dict(p, policy_version="0") for p in pts]}, tmp_path / "r.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
