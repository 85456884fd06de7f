"""Counters of one stage worker: logged every ``StagesConfig.stats_interval_s`` and, when
``stages.web_port`` is set, served as Prometheus text on ``/metrics`` (what ``sluice status`` reads)."""

from __future__ import annotations

import time
from collections import Counter


class StageCounters:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.started = time.monotonic()
        self._last = (self.started, Counter[str]())

    def inc(self, name: str, n: int = 1) -> None:
        self.counts[name] += n

    def summary(self) -> str:
        """Totals, and the input rate since the previous summary."""
        now = time.monotonic()
        then, before = self._last
        inputs = self.counts["redact_in"] + self.counts["join_in"]
        rate = (inputs - before["redact_in"] - before["join_in"]) / max(now - then, 1e-9)
        self._last = (now, Counter(self.counts))
        totals = " ".join(f"{k}={v}" for k, v in sorted(self.counts.items()))
        return f"{totals} input_rate={rate:.1f}/s"

    def prometheus(self, pending: int) -> str:
        """Prometheus text exposition: counters as ``sluice_stages_*_total``, pending joins as a gauge."""
        lines = [
            "# TYPE sluice_stages_processed_total counter",
            f'sluice_stages_processed_total{{stage="redact"}} {self.counts["redact_in"]}',
            f'sluice_stages_processed_total{{stage="join"}} {self.counts["join_in"]}',
            "# TYPE sluice_stages_dead_letters_total counter",
            f"sluice_stages_dead_letters_total {self.counts['deadlettered']}",
            "# TYPE sluice_stages_pending_joins gauge",
            f"sluice_stages_pending_joins {pending}",
        ]
        for name in (
            "emitted",
            "to_train",
            "audit_only",
            "duplicates",
            "orphans",
            "expired",
            "dropped_content",
        ):
            lines += [
                f"# TYPE sluice_stages_{name}_total counter",
                f"sluice_stages_{name}_total {self.counts[name]}",
            ]
        return "\n".join(lines) + "\n"
