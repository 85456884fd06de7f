"""The decoupled PPO objective of asynchronous RL (AReaL), with IcePop-style token masking.

Live traffic was sampled by whatever policy version served it (the behaviour policy, whose logprobs the
proxy recorded), so the PPO trust region is taken around a *proximal* policy instead: the learner's
weights before this update. Per token::

    w = min(pi_prox / pi_behav, cap)                    behaviour importance weight, no gradient
    r = pi_theta / pi_prox                              PPO ratio
    loss = -w * min(r * A, clip(r, 1 - clip_low, 1 + clip_high) * A)

and a token whose pi_prox / pi_behav leaves [mask_low, mask_high] gets no gradient at all (the training
and inference engines disagree on it: IcePop). With one optimizer step per update pi_theta equals pi_prox
at the gradient, so r = 1 and the clip only acts from the second mini-batch on (``ppo_minibatches``).
Samples without behaviour logprobs (a backend that reports none) use pi_prox as pi_behav (w = 1).

With ``kl_coef > 0`` each kept token also pays ``kl_coef * k3(pi_theta, pi_ref)``, the k3 estimator
``e^d - d - 1`` (d = log pi_ref - log pi_theta) of KL(pi_theta || pi_ref) to a fixed reference (the base
model): a regulariser that keeps the policy near the base where the rewards do not pull it, so training
moves less of what nobody taught it.

Shapes: B samples, T completion positions (right-padded).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trainers.grpo.ppo_terms import ClipConfig, aggregate, clipped_surrogate, icepop_keep


@dataclass(frozen=True)
class DecoupledLossConfig(ClipConfig):
    behaviour_weight_cap: float = 5.0
    kl_coef: float = 0.0


def decoupled_ppo_loss(
    logprobs: torch.Tensor,  # [B, T] log pi_theta(token), requires grad
    proximal_logprobs: torch.Tensor,  # [B, T] log pi_prox(token): the learner before this update
    behaviour_logprobs: torch.Tensor,  # [B, T] log pi_behav(token): what the serving engine reported
    advantages: torch.Tensor,  # [B]
    mask: torch.Tensor,  # [B, T] 1.0 on completion tokens, 0.0 on padding
    cfg: DecoupledLossConfig,
    weights: torch.Tensor | None = None,  # [B] per-sample weight (staleness), default 1
    normalizer: float | None = None,  # token_mean: tokens of the whole batch; seq_mean: its samples
    ref_logprobs: torch.Tensor | None = None,  # [B, T] log pi_ref(token), needed when kl_coef > 0
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Returns (scalar loss, detached stats: clip_frac, masked_frac, capped_frac, behaviour_weight_mean,
    ratio_mean, kl: mean k3 per completion token)."""
    mask = mask.to(logprobs.dtype)
    weights = torch.ones_like(advantages) if weights is None else weights
    prox = proximal_logprobs.detach()
    with torch.no_grad():
        behav_w = torch.exp((prox - behaviour_logprobs) * mask)  # [B, T]; 1 on padding
        keep = icepop_keep(behav_w, mask, cfg)
        capped = (behav_w > cfg.behaviour_weight_cap).to(mask.dtype) * keep
        behav_w = behav_w.clamp(max=cfg.behaviour_weight_cap)
    ratio = torch.exp((logprobs - prox) * mask)  # [B, T]
    surr1, surr2 = clipped_surrogate(ratio, advantages, cfg)
    pg = -torch.minimum(surr1, surr2) * behav_w  # [B, T]
    kl = torch.zeros_like(pg)
    if cfg.kl_coef > 0:
        if ref_logprobs is None:
            raise ValueError("kl_coef > 0 needs ref_logprobs")
        delta = (ref_logprobs.detach() - logprobs) * mask
        kl = (torch.exp(delta) - delta - 1.0) * mask
        pg = pg + cfg.kl_coef * kl
    loss = aggregate(pg, keep * weights[:, None], mask, cfg, normalizer)
    with torch.no_grad():
        n_tok = mask.sum().clamp(min=1.0)
        clipped = (surr2 < surr1).to(mask.dtype) * keep
        stats = {
            "clip_frac": clipped.sum() / n_tok,
            "masked_frac": (mask - keep).sum() / n_tok,
            "capped_frac": capped.sum() / n_tok,
            "behaviour_weight_mean": (behav_w * keep).sum() / keep.sum().clamp(min=1.0),
            "ratio_mean": (ratio.detach() * mask).sum() / n_tok,
            "kl": kl.detach().sum() / n_tok,
        }
    return loss, stats
