"""``python -m bench.live_loop --quick`` on the real instruct model: the loop really runs.

Both arms' traffic goes through the real stack; the live trainer updates from the live arm's recorded
traffic and its versions reach the live policy server and DuckDB, while the control server stays on the
base version. Learning figures come from the full run, not from this test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # the stack starts slowly on a busy box
ROOT = Path(__file__).resolve().parents[2]


def test_quick_live_loop_trains_and_serves_new_versions(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.live_loop", "--quick", "--minutes", "2", "--until-version", "3", "--late-delay-s", "5", "--update-samples", "8", "--settle-s", "2", "--keep-dir", str(tmp_path / "run"),
         "--plot", str(tmp_path / "reward.png")],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["updates"] >= 2, figures
    assert figures["policy_version_end"] >= 2
    # every update made one new version, and each is recorded with its step
    assert set(figures["steps_per_version"]) == {str(v) for v in range(1, figures["policy_version_end"] + 1)}
    assert all(n == 1 for n in figures["steps_per_version"].values())
    live = figures["reward_by_version_duckdb"]["live"]
    assert "0" in live and len(live) >= 2, live  # steps served by the base and by trained versions
    assert set(figures["reward_by_version_duckdb"]["control"]) == {"0"}  # the control never gets a push
    assert figures["live"]["answers"] > 0 and figures["control"]["answers"] > 0
    assert figures["reward_to_serving_p50_s"] is not None and figures["reward_to_serving_p50_s"] > 0
    assert 0.0 <= figures["stale_dropped_frac"] <= 1.0
    assert (tmp_path / "reward.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
