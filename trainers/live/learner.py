"""Live learner: one decoupled-PPO update per batch of recorded traffic, then the weight push (version + 1).

The rows arrive with their advantages and staleness weights (``trainers.live.loop``). Per update: the
proximal logprobs are the learner's own before the update (computed once up front when there is more than
one mini-batch; with one they are the forward pass's own values, detached); the behaviour logprobs are
the recorded ones (the proximal ones where the backend recorded none); each row is scored at the temperature
its call was sampled with, since the serving engine reports logprobs of the distribution it sampled from.
Gradients accumulate over micro-batches with the whole mini-batch's token count as the normaliser.

Full fine-tune, or LoRA (``live.lora_rank > 0``, peft): then the optimizer holds only the adapters, and a
push sends the merged matrices of the adapted modules (W + scale * B A) under the base model's names.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

import torch

from trainers.config import TrainerConfig
from trainers.devices import Device
from trainers.grpo.batch import PackedBatch, logprobs_of, pack
from trainers.learner_state import CheckpointedLearner, restore_optimizer
from trainers.live.decoupled_loss import DecoupledLossConfig, decoupled_ppo_loss
from trainers.live.samples import LiveRow
from trainers.live.weight_push import WeightPush
from trainers.samples import Sample

log = logging.getLogger("sluice.trainer.live")


def _packed(rows: list[LiveRow], pad_id: int, device: Device) -> tuple[PackedBatch, torch.Tensor]:
    """The rows as a packed batch, and their sampling temperatures as [B, 1, 1] for the logits."""
    packed = pack(
        [
            (r.sample.prompt_ids, Sample(token_ids=r.sample.token_ids, logprobs=r.sample.logprobs, reward=0.0),
             r.advantage, r.weight)
            for r in rows
        ],
        pad_id,
    )  # fmt: skip
    temps = torch.tensor([r.sample.temperature for r in rows], dtype=torch.float32, device=device)
    return packed.to(device), temps[:, None, None]


class LiveLearner(CheckpointedLearner):
    def __init__(
        self,
        tcfg: TrainerConfig,
        model_source: str,
        output_dir: str,
        start_version: int = 0,
        resume_from: str | None = None,
        device: Device = "cpu",
    ) -> None:
        self.t, self.live = tcfg, tcfg.live
        model = self.load_on_device(model_source, tcfg.tiny, tcfg.seed, device)
        self.lora = self.live.lora_rank > 0
        if self.lora:
            model = self._with_lora(model, resume_from)
        self.model = model.train()
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.opt = torch.optim.AdamW(params, lr=tcfg.learning_rate, weight_decay=tcfg.weight_decay)
        restore_optimizer(self.opt, resume_from)
        self.keep_checkpoints = tcfg.keep_checkpoints
        self.loss_cfg = DecoupledLossConfig(
            clip_low=tcfg.clip_low, clip_high=tcfg.clip_high, mask_low=tcfg.mask_low, mask_high=tcfg.mask_high,
            behaviour_weight_cap=self.live.behaviour_weight_cap, agg=tcfg.loss_agg,
        )  # fmt: skip
        self.version = start_version
        self.updates = 0
        self.push: WeightPush | None = None
        if self.live.push_weights:
            self.push = WeightPush(
                tcfg.policy_server_urls(), self.live.push_transport, self.live.push_timeout_s,
                Path(output_dir) / "push", self.live.keep_push_files,
            )  # fmt: skip
            self.version = self.push.align(self.version, self.pushed_tensors)

    def _with_lora(self, model: torch.nn.Module, resume_from: str | None) -> torch.nn.Module:
        from peft import LoraConfig, PeftModel, get_peft_model

        if resume_from is not None and (Path(resume_from) / "adapter_config.json").is_file():
            return PeftModel.from_pretrained(model, resume_from, is_trainable=True)
        conf = LoraConfig(
            r=self.live.lora_rank, lora_alpha=self.live.lora_alpha, lora_dropout=0.0,
            target_modules=list(self.live.lora_targets), bias="none",
        )  # fmt: skip
        return get_peft_model(model, conf)

    # ----------------------------------------------------------------------------- weights

    @torch.no_grad()
    def pushed_tensors(self) -> dict[str, torch.Tensor]:
        """What a push sends, named as in the served model's state_dict()."""
        if not self.lora:
            return {n: p.detach() for n, p in self.model.named_parameters()}  # tied weights once
        from peft.tuners.lora import LoraLayer

        out: dict[str, torch.Tensor] = {}
        prefix = "base_model.model."
        for name, module in self.model.named_modules():
            if isinstance(module, LoraLayer) and hasattr(module, "get_delta_weight"):
                base = module.get_base_layer().weight
                delta = sum(module.get_delta_weight(a) for a in module.active_adapters)
                out[name.removeprefix(prefix) + ".weight"] = (base + delta).detach()
        return out

    # ----------------------------------------------------------------------------- training

    def _proximal(self, rows: list[LiveRow]) -> list[torch.Tensor]:
        """Per row: log pi_prox of its completion tokens under the weights before this update."""
        out: list[torch.Tensor] = []
        mb = self.t.micro_batch_size
        with torch.no_grad():
            for i in range(0, len(rows), mb):
                chunk = rows[i : i + mb]
                batch, temps = _packed(chunk, self.tokenizer.pad_token_id, self.device)
                lp = logprobs_of(self.model, batch, temps)
                out.extend(lp[b, : len(r.sample.token_ids)] for b, r in enumerate(chunk))
        return out

    def train(self, rows: list[LiveRow]) -> dict[str, Any]:
        """One update over these rows (``ppo_minibatches`` optimizer steps), then the push when due."""
        t0 = time.perf_counter()
        stats = {k: 0.0 for k in ("loss", "clip_frac", "masked_frac", "capped_frac", "behaviour_weight_mean",
                                  "ratio_mean", "grad_norm")}  # fmt: skip
        updated = False
        n_mb = min(self.live.ppo_minibatches, len(rows))
        prox_all = self._proximal(rows) if n_mb > 1 else None
        order = list(range(len(rows)))
        total_tokens = max(1, sum(len(r.sample.token_ids) for r in rows))
        for m in range(n_mb):
            idx = order[m::n_mb]
            mini = [rows[i] for i in idx]
            mini_tokens = sum(len(r.sample.token_ids) for r in mini)
            normalizer = float(mini_tokens) if self.t.loss_agg == "token_mean" else float(len(mini))
            self.opt.zero_grad(set_to_none=True)
            for j in range(0, len(mini), self.t.micro_batch_size):
                chunk = mini[j : j + self.t.micro_batch_size]
                batch, temps = _packed(chunk, self.tokenizer.pad_token_id, self.device)
                lp = logprobs_of(self.model, batch, temps)  # [B, T]
                if prox_all is None:
                    prox = lp.detach()
                else:
                    prox = torch.zeros_like(lp)
                    for b, i in enumerate(idx[j : j + self.t.micro_batch_size]):
                        prox[b, : prox_all[i].shape[0]] = prox_all[i]
                behaviour = torch.where(batch.has_behaviour[:, None], batch.behaviour, prox)
                loss, st = decoupled_ppo_loss(
                    lp, prox, behaviour, batch.advantages, batch.completion_mask, self.loss_cfg,
                    weights=batch.weights, normalizer=normalizer,
                )  # fmt: skip
                loss.backward()
                share = batch.n_tokens / total_tokens
                stats["loss"] += float(loss.detach()) / n_mb
                for k in ("clip_frac", "masked_frac", "capped_frac", "behaviour_weight_mean", "ratio_mean"):
                    stats[k] += float(st[k]) * share
            params = [p for p in self.model.parameters() if p.requires_grad]
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, self.t.max_grad_norm))
            stats["grad_norm"] = max(stats["grad_norm"], grad_norm)
            if math.isfinite(grad_norm):
                self.opt.step()
                updated = True
            else:
                log.warning("non-finite gradient norm: mini-batch step skipped")
            self.opt.zero_grad(set_to_none=True)
        learn_s = time.perf_counter() - t0
        push: dict[str, Any] = {"push_s": 0.0, "pushed_servers": 0, "push_errors": 0}
        if updated:
            self.version += 1
            self.updates += 1
            if self.push is not None and self.updates % self.live.push_every == 0:
                outcome = self.push.publish(self.pushed_tensors(), str(self.version))
                push = {"push_s": outcome.push_s, "pushed_servers": outcome.pushed,
                        "push_errors": len(outcome.errors), "swap_ms": outcome.swap_ms_max,
                        "pushed_version": self.version}  # fmt: skip
        return {
            **stats,
            **push,
            "updated": updated,
            "policy_version": self.version,
            "trained_samples": len(rows),
            "trained_tokens": sum(len(r.sample.token_ids) for r in rows),
            "learn_s": learn_s,
            "serving_versions": dict(self.push.serving) if self.push is not None else {},
        }
