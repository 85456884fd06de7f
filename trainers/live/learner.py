"""Live learner: one decoupled-PPO update per batch of recorded traffic, then the weight push (version + 1).

The rows arrive with their advantages and staleness weights (``trainers.live.loop``). Per update: the
proximal logprobs are the learner's own before the update (computed once up front when there is more than
one mini-batch; with one they are the forward pass's own values, detached); the behaviour logprobs are
the recorded ones (the proximal ones where the backend recorded none); each row is scored at the temperature
its call was sampled with, since the serving engine reports logprobs of the distribution it sampled from.
Gradients accumulate over micro-batches with the whole mini-batch's token count as the normaliser. A merged
multi-step trajectory (``trainers.live.merge``) is one row: its tool results and user turns are attended but
its ``loss_mask`` keeps them out of the loss and out of the token counts.

Full fine-tune, or LoRA (``live.lora_rank > 0``, peft): then the optimizer holds only the adapters, and a
push sends the merged matrices of the adapted modules (W + scale * B A) under the base model's names.

Each learning scope (the shared policy, each tenant's own: ``trainers.live.scopes``) has its own weights,
optimizer and version line; ``train(rows, scope)`` updates one scope. Training and publishing are two
calls (``train``, then ``publish``), so the driver records the new version's lineage in the ledger
between them. With ``trainer.promotion: gated`` a version is pushed as a *candidate*: no request gets it
until the control plane promotes it. The learner keeps a copy of a scope's weights at each version it
published and at the promoted one; when the gates turn a candidate down (it is gone from the servers),
the scope starts again from its newest version the servers still keep, so what the gates refused is not
carried into the next candidate.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

import torch

from sluice.evolution import SHARED_SCOPE
from trainers.config import TrainerConfig
from trainers.devices import Device
from trainers.grpo.batch import PackedBatch, logprobs_of, pack
from trainers.learner_state import CheckpointedLearner, restore_optimizer
from trainers.live.decoupled_loss import DecoupledLossConfig, decoupled_ppo_loss
from trainers.live.samples import LiveRow
from trainers.live.scopes import ScopeBank, ScopeState, settle_candidates
from trainers.live.weight_push import WeightPush
from trainers.samples import Sample

log = logging.getLogger("sluice.trainer.live")


def trained_tokens(row: LiveRow) -> int:
    """Tokens of the row the loss trains (a merged trajectory's model-generated ones)."""
    mask = row.sample.loss_mask
    return len(row.sample.token_ids) if mask is None else sum(mask)


def _packed(rows: list[LiveRow], pad_id: int, device: Device) -> tuple[PackedBatch, torch.Tensor]:
    """The rows as a packed batch, and their sampling temperatures as [B, 1, 1] for the logits."""
    packed = pack(
        [
            (r.sample.prompt_ids, Sample(token_ids=r.sample.token_ids, logprobs=r.sample.logprobs, reward=0.0,
                                         loss_mask=r.sample.loss_mask), r.advantage, r.weight)
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
        self.opt = self._optimizer(params)  # the shared scope's; checkpoints save it
        restore_optimizer(self.opt, resume_from)
        self.keep_checkpoints = tcfg.keep_checkpoints
        self.loss_cfg = DecoupledLossConfig(
            clip_low=tcfg.clip_low, clip_high=tcfg.clip_high, mask_low=tcfg.mask_low, mask_high=tcfg.mask_high,
            behaviour_weight_cap=self.live.behaviour_weight_cap, agg=tcfg.loss_agg, kl_coef=tcfg.kl_coef,
        )  # fmt: skip
        self.version = start_version
        self.promotion = tcfg.promotion
        self.push: WeightPush | None = None
        if self.live.push_weights:
            self.push = WeightPush(
                tcfg.policy_server_urls(), self.live.push_transport, self.live.push_timeout_s,
                Path(output_dir) / "push", self.live.keep_push_files,
            )  # fmt: skip
            role = "candidate" if self.promotion == "gated" else "serve"
            self.version = self.push.align(self.version, self.pushed_tensors, role)
        self.bank = ScopeBank(self.model, self._optimizer, self.opt, self.version)

    def _optimizer(self, params: list[torch.nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.AdamW(params, lr=self.t.learning_rate, weight_decay=self.t.weight_decay)

    def get_versions(self) -> dict[str, int]:
        """Each scope's version number (the shared scope's is ``get_version``)."""
        return {name: scope.version for name, scope in self.bank.scopes.items()}

    def save(self, output_dir: str, state: Any) -> str:
        self.bank.activate(SHARED_SCOPE)  # a checkpoint holds the shared line (own lines restart on resume)
        return super().save(output_dir, state)

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

    @torch.no_grad()
    def follow_servers(self, scope: ScopeState) -> dict[str, Any]:
        """Gated mode: settle the scope's candidates the control plane decided (``settle_candidates``).
        Its newest gone from every server means its line was turned down: the scope's weights (and Adam
        moments) go back to its newest version the servers still keep (the promoted one, else the base), so
        what the gates refused does not reach the next candidate. Older ones gone were only superseded."""
        if self.push is None or self.promotion != "gated" or not scope.pending:
            return {}
        statuses = [s for s in self.push.statuses().values() if not isinstance(s, Exception)]
        if not statuses:
            return {}
        kept = {v for s in statuses for v in (*s.versions, s.serving_version)}
        settled = settle_candidates(scope.pending, kept, list(scope.snapshots), self.bank.base_name)
        if not settled.gone:
            return {}
        scope.pending = settled.pending
        if settled.reset_to is None:  # superseded ones set aside: their weights are no longer needed
            scope.snapshots = {v: w for v, w in scope.snapshots.items() if v not in settled.gone}
            return {"set_aside": settled.gone}
        target = settled.reset_to
        self.bank.load(scope, scope.snapshots.get(target, self.bank.base))
        scope.opt.state.clear()
        scope.parent = target
        scope.snapshots = {
            v: w for v, w in scope.snapshots.items() if v == target or v == self.bank.base_name
        }
        scope.resets += 1
        log.info("%s: candidates %s turned down; training goes on from %s", scope.name, settled.gone, target)
        return {"turned_down": settled.gone, "reset_to": target}

    @torch.no_grad()
    def reset_scope(self, scope_name: str, target: str) -> str:
        """An erasure tainted the line after ``target``: the scope's weights go back to ``target`` (the base
        when no copy of it is held), its Adam moments are cleared, and every copy of a newer version is
        dropped from memory. Returns the version the line now starts from."""
        scope = self.bank.activate(scope_name)
        used = target if target in scope.snapshots else self.bank.base_name
        self.bank.load(scope, scope.snapshots.get(used, self.bank.base))
        scope.opt.state.clear()
        scope.parent = used
        scope.pending = []
        # the erasure took the newer ones off the servers
        scope.routed = [v for v in scope.routed if v == used]
        scope.snapshots = {v: w for v, w in scope.snapshots.items() if v in (used, self.bank.base_name)}
        scope.resets += 1
        log.info("%s: an erasure took the line back to %s", scope.name, used)
        return used

    @torch.no_grad()
    def scope_weights(self, scope_name: str) -> dict[str, torch.Tensor]:
        """The scope's trainable weights as they are now (LoRA: the adapters), copied to the CPU."""
        self.bank.activate(scope_name)
        return {n: p.detach().to("cpu", copy=True) for n, p in self.bank.params.items()}

    @torch.no_grad()
    def load_scope(
        self, scope_name: str, weights: dict[str, torch.Tensor], version_name: str, version: int
    ) -> str:
        """A restart resumes a rebuild: the scope starts again from these weights as ``version_name`` (Adam
        moments cleared, no copy of another version but the base kept), its version number at least
        ``version`` so the replay names the versions the interrupted one would have. Returns the name."""
        scope = self.bank.activate(scope_name)
        self.bank.load(scope, weights)
        scope.opt.state.clear()
        scope.parent = version_name
        scope.pending, scope.routed = [], []
        scope.snapshots = {version_name: self.bank.copy(), self.bank.base_name: self.bank.base}
        scope.version = max(scope.version, version)
        if scope.name == SHARED_SCOPE:
            self.version = scope.version
        scope.resets += 1
        log.info("%s: an unfinished rebuild resumes from %s", scope.name, version_name)
        return version_name

    def publish(self, scope_name: str = SHARED_SCOPE) -> dict[str, Any]:
        """Push the scope's current weights under its current version: a candidate (gated, or any own
        scope: only its tenant is served it, by name), or the version every request gets (direct, shared)."""
        if self.push is None:
            return {"push_s": 0.0, "pushed_servers": 0, "push_errors": 0}
        scope = self.bank.activate(scope_name)
        name = scope.version_name()
        # the default only changes when no tenant has a line of its own to keep apart from the pooled one
        direct_default = (
            self.promotion == "direct" and scope.name == SHARED_SCOPE and not self.live.has_own_scopes
        )
        role = "serve" if direct_default else "candidate"
        # laid over the default: every version shares the tensors no line trains (the base model's)
        outcome = self.push.publish(self.pushed_tensors(), name, role=role)
        self.bank.snapshot(scope)
        if self.promotion == "gated":
            scope.pending.append(name)
        scope.parent = name
        self.bank.prune(scope)
        routed = role == "candidate" and not outcome.errors
        superseded = self._let_go_superseded(scope, name) if routed else []
        return {"push_s": outcome.push_s, "pushed_servers": outcome.pushed, "push_errors": len(outcome.errors),
                "swap_ms": outcome.swap_ms_max, "pushed_version": scope.version, "pushed_name": name,
                "push_role": role, "discarded_superseded": superseded}  # fmt: skip

    def withdraw(self, versions: list[str], fallbacks: list[str]) -> dict[str, list[str]]:
        """A rebuild's tainted versions off every server and disk (``WeightPush.withdraw``)."""
        if self.push is None or not versions:
            return {"held": [], "rolled_back": [], "files_deleted": []}
        return self.push.withdraw(versions, fallbacks)

    def _let_go_superseded(self, scope: ScopeState, name: str) -> list[str]:
        """Direct promotion routes each new version of a line to its tenants by assignment, as a candidate
        the servers never evict: keep the new one and its parent (what the assignment names until the
        driver routes the new one, and the line's rollback target) and take older ones off the servers,
        or they fill them (``serve.max_versions``) and refuse the line's next versions."""
        if self.push is None or self.promotion != "direct":
            return []
        scope.routed.append(name)
        gone = []
        while len(scope.routed) > 2:
            old = scope.routed.pop(0)
            if self.push.discard(old) == 0:
                gone.append(old)
        return gone

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

    def _reference(self, batch: PackedBatch, temps: torch.Tensor) -> torch.Tensor | None:
        """log pi_ref of the batch's tokens, the base model's (the adapter off), when the loss pays KL to it."""
        if self.loss_cfg.kl_coef <= 0:
            return None
        with torch.no_grad(), self.model.disable_adapter():
            return logprobs_of(self.model, batch, temps)

    def train(
        self, rows: list[LiveRow], scope_name: str = SHARED_SCOPE, replay: bool = False
    ) -> dict[str, Any]:
        """One update of one scope over these rows (``ppo_minibatches`` optimizer steps); ``due_push``
        says whether the driver should publish the version it made (``publish``) once its lineage is
        recorded. ``replay``: an erasure's rebuild replays an update the line already made, made as it was
        then, when the rows' sampling policy was the learner's own within the staleness bound (behaviour
        weight about 1, almost nothing masked): here exactly 1, nothing masked, so how far the rebuilt line
        has moved from the line that sampled the rows does not decide which tokens it learns from (weighed
        against the recorded logprobs, a full ``bench.unlearn`` replay masked 13% of its tokens per update
        against 0-8% in the original updates)."""
        # isolation, enforced where the weights change and not only where rows are routed
        foreign = sorted({r.sample.tenant for r in rows if r.sample.tenant and self.live.scope_of(r.sample.tenant)
                          != scope_name})  # fmt: skip
        if foreign:
            raise ValueError(f"rows of tenants {foreign} may not train learning scope {scope_name!r}")
        scope = self.bank.activate(scope_name)
        opt = scope.opt
        settled = self.follow_servers(scope)
        parent = scope.parent
        t0 = time.perf_counter()
        stats = {k: 0.0 for k in ("loss", "clip_frac", "masked_frac", "capped_frac", "behaviour_weight_mean",
                                  "ratio_mean", "kl", "grad_norm")}  # fmt: skip
        updated = False
        n_mb = min(self.live.ppo_minibatches, len(rows))
        prox_all = self._proximal(rows) if n_mb > 1 else None
        order = list(range(len(rows)))
        total_tokens = max(1, sum(trained_tokens(r) for r in rows))
        for m in range(n_mb):
            idx = order[m::n_mb]
            mini = [rows[i] for i in idx]
            mini_tokens = sum(trained_tokens(r) for r in mini)
            normalizer = float(mini_tokens) if self.t.loss_agg == "token_mean" else float(len(mini))
            opt.zero_grad(set_to_none=True)
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
                recorded = batch.has_behaviour[:, None] & (not replay)
                behaviour = torch.where(recorded, batch.behaviour, prox)
                loss, st = decoupled_ppo_loss(
                    lp, prox, behaviour, batch.advantages, batch.loss_mask, self.loss_cfg,
                    weights=batch.weights, normalizer=normalizer, ref_logprobs=self._reference(batch, temps),
                )  # fmt: skip
                loss.backward()
                share = batch.n_tokens / total_tokens
                stats["loss"] += float(loss.detach()) / n_mb
                for k in (
                    "clip_frac",
                    "masked_frac",
                    "capped_frac",
                    "behaviour_weight_mean",
                    "ratio_mean",
                    "kl",
                ):
                    stats[k] += float(st[k]) * share
            params = [p for p in self.model.parameters() if p.requires_grad]
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, self.t.max_grad_norm))
            stats["grad_norm"] = max(stats["grad_norm"], grad_norm)
            if math.isfinite(grad_norm):
                opt.step()
                updated = True
            else:
                log.warning("non-finite gradient norm: mini-batch step skipped")
            opt.zero_grad(set_to_none=True)
        learn_s = time.perf_counter() - t0
        due = False
        if updated:
            scope.version += 1
            scope.updates += 1
            if scope.name == SHARED_SCOPE:
                self.version = scope.version
            due = self.push is not None and scope.updates % self.live.push_every == 0
        return {
            **stats,
            "scope": scope.name,
            "due_push": due,
            "parent_version": parent,
            "version_name": scope.version_name(),
            "turned_down": settled.get("turned_down", []),
            "set_aside": settled.get("set_aside", []),
            "reset_to": settled.get("reset_to"),
            "resets_total": sum(s.resets for s in self.bank.scopes.values()),
            "updated": updated,
            "policy_version": scope.version,
            "trained_samples": len(rows),
            "trained_tokens": sum(trained_tokens(r) for r in rows),
            "merged_samples": sum(r.sample.merged_steps > 1 for r in rows),
            "model_turns": sum(r.sample.merged_steps for r in rows),
            "learn_s": learn_s,
            "serving_versions": dict(self.push.serving) if self.push is not None else {},
        }
