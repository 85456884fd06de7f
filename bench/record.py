"""Keep a benchmark run: append its line to ``docs/benchmarks/<benchmark>.jsonl``, the files the README's
table and the docs page are rendered from (``docs/render_benchmarks.py`` reads and checks every line).

    record_run("governed_loop", figures, TARGETS, headline=["reward_gain_vs_control"], notes="...")
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RUNS_DIR = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"


def machine() -> str:
    cores = os.cpu_count() or 0
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = os.getloadavg()[0]
    return f"{cores} cores, {mem_gib:.0f} GiB, no GPU; load average {load:.1f} when it ended"


def commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def record_run(
    benchmark: str,
    figures: dict[str, Any],
    targets: dict[str, str],
    headline: list[str],
    notes: str = "",
    command: str | None = None,
    runs_dir: Path = RUNS_DIR,
) -> Path:
    """Append one run (numeric figures only; ``targets`` like ``{"x": ">= 1.5"}``); returns the file."""
    numbers = {
        k: float(v) for k, v in figures.items() if isinstance(v, int | float) and not isinstance(v, bool)
    }
    numbers.update({k: float(v) for k, v in figures.items() if isinstance(v, bool)})
    line = {
        "benchmark": benchmark,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
        "machine": machine(),
        "commit": commit(),
        "command": command or "python -m bench." + benchmark + "".join(f" {a}" for a in sys.argv[1:]),
        "figures": numbers,
        "targets": {k: v for k, v in targets.items() if k in numbers},
        "headline": [h for h in headline if h in numbers],
        "notes": notes,
    }
    runs_dir.mkdir(parents=True, exist_ok=True)
    path = runs_dir / f"{benchmark}.jsonl"
    with path.open("a") as f:
        f.write(json.dumps(line, sort_keys=False) + "\n")
    return path
