"""Per-step metrics: appended to ``<output_dir>/metrics.jsonl`` and shown on a rich progress bar."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from trainers.samples import Group


def reward_stats(groups: list[Group]) -> dict[str, float]:
    """Mean/std of fresh samples' rewards, the logged samples' mean, and failures, over these groups."""
    fresh = [s.reward for g in groups for s in g.samples if not s.is_logged]
    logged = [s.reward for g in groups for s in g.samples if s.is_logged]
    return {
        "reward_mean": statistics.fmean(fresh) if fresh else math.nan,
        "reward_std": statistics.pstdev(fresh) if len(fresh) > 1 else 0.0,
        "reward_logged_mean": statistics.fmean(logged) if logged else math.nan,
        "reward_failures": float(sum(s.reward_failed for g in groups for s in g.samples)),
        "fresh_samples": float(len(fresh)),
        "generated_tokens": float(
            sum(len(s.token_ids) for g in groups for s in g.samples if not s.is_logged)
        ),
    }


class MetricsLog:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._f = path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
        self._f.write(json.dumps(clean, separators=(",", ":")) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()


class StepProgress:
    """A rich progress bar over learner steps (stderr; disabled when ``enabled`` is False)."""

    def __init__(self, total: int | None, enabled: bool = True) -> None:
        self.progress = Progress(
            TextColumn("[bold]train"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
            console=Console(stderr=True),
            disable=not enabled,
        )
        self.task = self.progress.add_task("train", total=total, info="waiting for tasks")

    def update(self, m: dict[str, Any]) -> None:
        info = (
            f"v{m['policy_version']} reward {m['reward_mean']:.3f}±{m['reward_std']:.3f} "
            f"stale {m['staleness_mean']:.2f} clip {m['clip_frac']:.3f} mask {m['masked_frac']:.3f} "
            f"kl {m['kl']:.4f} {m['samples_per_s']:.0f} samples/s {m['tokens_per_s']:.0f} tok/s"
        )
        self.progress.update(self.task, advance=1, info=info)

    def __enter__(self) -> StepProgress:
        self.progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.progress.stop()
