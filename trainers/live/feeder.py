"""Live feeder: the train-topic consumer of the re-sampling mode (offsets, idempotence by trajectory version,
dead letters), handing out each trajectory version's recorded model calls as live samples instead of
prompts to re-sample (a chained multi-step trajectory as one merged sample). Steps left out are counted by reason; a version with nothing to train is skipped
under its main reason (a later version with a reward is still taken).
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from typing import Any

from sluice.events import Trajectory
from trainers.actors.feeder import TaskFeeder
from trainers.exceptions import TaskError
from trainers.live.extract import extract_samples
from trainers.live.samples import LiveItem


class LiveFeeder(TaskFeeder):
    @cached_property
    def step_counts(self) -> Counter[str]:
        """Steps of the versions built so far: samples taken, and the others by the reason left out."""
        return Counter()

    def _build(self, traj: Trajectory) -> LiveItem:  # type: ignore[override]
        t = self.cfg.trainer
        item = extract_samples(
            traj, self.tokenizer, t.models, self.max_prompt_tokens, t.live.group_prefix_tokens
        )
        self.step_counts.update(item.skipped_steps)
        self.step_counts["samples"] += len(item.samples)
        self.step_counts["retokenized"] += sum(s.retokenized for s in item.samples)
        self.step_counts["no_behaviour_logprobs"] += sum(s.logprobs is None for s in item.samples)
        self.step_counts.update(item.merge)  # one-sequence counts (merged, multi-step, fallback steps)
        if not item.samples:
            reason = max(item.skipped_steps, key=item.skipped_steps.__getitem__, default="no prompt")
            raise TaskError(reason, "no step of this version can train")
        return item

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "steps": dict(self.step_counts)}
