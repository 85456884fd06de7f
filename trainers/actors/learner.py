"""Learner: one GRPO update per batch of scored groups, then publishes the new weights (version + 1).

Staleness is checked here, against the version the update is about to change: a group sampled more than
``max_staleness`` versions ago is dropped or down-weighted (``stale_policy``). Groups whose rewards are all
equal carry no signal and are left out. Gradients accumulate over micro-batches; the token-mean
normaliser is the token count of the whole batch, so micro-batching does not change the loss.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from typing import Any

import torch

from trainers.devices import Device
from trainers.grpo.advantages import group_advantages, staleness_weight
from trainers.grpo.batch import PackedBatch, logprobs_of, pack
from trainers.grpo.loss import LossConfig, grpo_loss
from trainers.grpo.trust_region import StepOutcome, UpdateBound, bounded_step, token_kl
from trainers.learner_state import CheckpointedLearner, restore_optimizer
from trainers.samples import Group, Sample
from trainers.settings import TrainerSettings
from trainers.weight_sync.base import WeightSync

log = logging.getLogger("sluice.trainer.learner")


class Learner(CheckpointedLearner):
    def __init__(
        self,
        cfg: TrainerSettings,
        model_source: str,
        weight_sync: WeightSync,
        start_version: int = 0,
        resume_from: str | None = None,
        device: Device = "cpu",
    ) -> None:
        t = cfg.trainer
        self.tcfg = t
        self.model = self.load_on_device(model_source, t.tiny, t.seed, device).train()
        self.ref = copy.deepcopy(self.model).eval().requires_grad_(False) if t.kl_coef > 0 else None
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=t.learning_rate, weight_decay=t.weight_decay)
        restore_optimizer(self.opt, resume_from)
        self.keep_checkpoints = t.keep_checkpoints
        self.loss_cfg = LossConfig(
            clip_low=t.clip_low, clip_high=t.clip_high, mask_low=t.mask_low, mask_high=t.mask_high,
            kl_coef=t.kl_coef, agg=t.loss_agg,
        )  # fmt: skip
        self.bound = UpdateBound(t.max_update_kl) if t.max_update_kl is not None else None
        self.sync = weight_sync
        self.version = start_version
        self.sync.publish(self.model.state_dict(), self.version)
        log.info("learner ready: %s on %s, policy v%d", model_source, device, self.version)

    def _rows(
        self, groups: list[Group], m: dict[str, float]
    ) -> tuple[list[tuple[list[int], Sample, float, float]], int, int]:
        """Rows with a learning signal, plus the token and sample counts of the whole batch they came from
        (zero-signal groups included: the loss is a mean over everything sampled, not over the informative
        part only)."""
        rows = []
        batch_tokens = batch_samples = 0
        for g in groups:
            lag = self.version - g.policy_version
            m["staleness_sum"] += lag * len(g.samples)
            m["staleness_max"] = max(m["staleness_max"], lag)
            w = staleness_weight(lag, self.tcfg.max_staleness, self.tcfg.stale_policy, self.tcfg.stale_decay)
            if w is None:
                m["dropped_stale"] += len(g.samples)
                continue
            if w < 1:
                m["downweighted"] += len(g.samples)
            batch_tokens += sum(len(s.token_ids) for s in g.samples)
            batch_samples += sum(1 for s in g.samples if s.token_ids)
            adv = group_advantages([s.reward for s in g.samples], scale=self.tcfg.scale_rewards)
            if all(a == 0 for a in adv):
                m["zero_signal_groups"] += 1
                continue
            rows.extend((g.prompt_ids, s, a, w) for s, a in zip(g.samples, adv, strict=True) if s.token_ids)
        return rows, batch_tokens, batch_samples

    def train_step(self, groups: list[Group]) -> dict[str, Any]:
        t0 = time.perf_counter()
        m: dict[str, float] = {
            k: 0.0
            for k in ("staleness_sum", "staleness_max", "dropped_stale", "downweighted", "zero_signal_groups")
        }
        rows, batch_tokens, batch_samples = self._rows(groups, m)
        n_samples = sum(len(g.samples) for g in groups)
        stats = {
            "loss": 0.0,
            "clip_frac": 0.0,
            "masked_frac": 0.0,
            "kl": 0.0,
            "ratio_mean": 0.0,
            "grad_norm": 0.0,
            "update_kl": 0.0,
            "update_scale": 0.0,
            "update_backtracks": 0.0,
        }
        updated = False
        if rows:
            total_tokens = sum(len(s.token_ids) for _, s, _, _ in rows)
            normalizer = float(batch_tokens) if self.tcfg.loss_agg == "token_mean" else float(batch_samples)
            self.opt.zero_grad(set_to_none=True)
            mb = self.tcfg.micro_batch_size
            # (batch, logprobs before the step, mask): the update's KL is measured on the fresh samples' tokens,
            # which were drawn from (about) the policy before the step; the logged ones were not
            probes = []
            for i in range(0, len(rows), mb):
                chunk = rows[i : i + mb]
                batch = pack(chunk, self.tokenizer.pad_token_id).to(self.device)
                lp = logprobs_of(self.model, batch, self.tcfg.temperature)  # [B, T]
                fresh = torch.tensor(
                    [not s.is_logged for _, s, _, _ in chunk], dtype=lp.dtype, device=lp.device
                )  # [B]
                probes.append((batch, lp.detach(), batch.completion_mask * fresh[:, None]))
                behaviour = torch.where(batch.has_behaviour[:, None], batch.behaviour, lp.detach())
                ref_lp = None
                if self.ref is not None:
                    with torch.no_grad():
                        ref_lp = logprobs_of(self.ref, batch, self.tcfg.temperature)
                loss, st = grpo_loss(
                    lp, behaviour, batch.advantages, batch.completion_mask, self.loss_cfg,
                    weights=batch.weights, ref_logprobs=ref_lp, normalizer=normalizer,
                )  # fmt: skip
                loss.backward()
                share = batch.n_tokens / max(1, total_tokens)
                stats["loss"] += float(loss.detach())
                for k in ("clip_frac", "masked_frac", "kl", "ratio_mean"):
                    stats[k] += float(st[k]) * share
            grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.tcfg.max_grad_norm)
            stats["grad_norm"] = float(grad_norm)
            if math.isfinite(stats["grad_norm"]):
                outcome = self._step(probes)
                stats["update_kl"] = outcome.kl
                stats["update_scale"] = outcome.scale
                stats["update_backtracks"] = float(outcome.backtracks)
                if outcome.applied:
                    self.version += 1
                    updated = True
                    self.sync.publish(self.model.state_dict(), self.version)
                else:
                    log.warning(
                        "update undone: KL %.3g above max_update_kl even at 1/16 step", outcome.kl_full_step
                    )
            else:
                log.warning("non-finite gradient norm: update skipped")
            self.opt.zero_grad(set_to_none=True)
        return {
            **stats,
            "updated": updated,
            "policy_version": self.version,
            "trained_samples": len(rows),
            "staleness_mean": m["staleness_sum"] / max(1, n_samples),
            "staleness_max": m["staleness_max"],
            "dropped_stale": m["dropped_stale"],
            "downweighted": m["downweighted"],
            "zero_signal_groups": m["zero_signal_groups"],
            "learn_s": time.perf_counter() - t0,
        }

    def _step(self, probes: list[tuple[PackedBatch, torch.Tensor, torch.Tensor]]) -> StepOutcome:
        """The optimizer step, bounded in KL on the trained tokens when ``max_update_kl`` is set."""
        if self.bound is None:
            self.opt.step()
            return StepOutcome(kl=float("nan"), kl_full_step=float("nan"), scale=1.0, backtracks=0)

        @torch.no_grad()
        def measure() -> float:
            total = count = 0.0
            for batch, old, mask in probes:
                s, n = token_kl(logprobs_of(self.model, batch, self.tcfg.temperature), old, mask)
                total, count = total + s, count + n
            return total / max(1.0, count)

        params = [p for p in self.model.parameters() if p.requires_grad]
        return bounded_step(params, self.opt.step, measure, self.bound)
