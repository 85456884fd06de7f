"""The GRPO policy loss: per-token clipped importance ratio against the sampling-time logprobs, IcePop-style
masking of tokens with extreme ratios, optional KL to a reference policy, per-sample weights.

Departures from the paper's recipe, on purpose:
- the ratio is taken against the *sampling-time* logprobs reported by the rollout engine, not a recomputed
  "old policy" pass: it corrects for staleness and absorbs the numerical mismatch between the rollout
  engine and the trainer in one place (decoupled/behaviour-policy PPO as in AReaL);
- tokens whose ratio leaves [mask_low, mask_high] get no gradient at all (IcePop/KPop): clipping alone
  still lets the other side of the min pass a gradient for such tokens;
- asymmetric clip (DAPO clip-higher) and token-mean aggregation over the whole batch by default.

Shapes: B samples, T completion positions (right-padded).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trainers.grpo.ppo_terms import ClipConfig, aggregate, clipped_surrogate, icepop_keep


@dataclass(frozen=True)
class LossConfig(ClipConfig):
    kl_coef: float = 0.0


def grpo_loss(
    logprobs: torch.Tensor,  # [B, T] log pi_theta(token), requires grad
    behaviour_logprobs: torch.Tensor,  # [B, T] sampling-time log pi_behaviour(token)
    advantages: torch.Tensor,  # [B]
    mask: torch.Tensor,  # [B, T] 1.0 on completion tokens, 0.0 on padding
    cfg: LossConfig,
    weights: torch.Tensor | None = None,  # [B] per-sample weight (staleness down-weighting), default 1
    ref_logprobs: torch.Tensor | None = None,  # [B, T] log pi_ref(token), needed when kl_coef > 0
    normalizer: float
    | None = None,  # token_mean: divide by this many tokens (whole batch across micro-batches)
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Returns (scalar loss, detached stats: clip_frac, masked_frac, kl, ratio_mean)."""
    mask = mask.to(logprobs.dtype)
    weights = torch.ones_like(advantages) if weights is None else weights
    log_ratio = (logprobs - behaviour_logprobs) * mask  # [B, T]; 0 on padding so exp() stays finite
    ratio = torch.exp(log_ratio)  # [B, T]
    surr1, surr2 = clipped_surrogate(ratio, advantages, cfg)
    pg = -torch.minimum(surr1, surr2)  # [B, T]
    with torch.no_grad():
        r = ratio.detach()
        keep = icepop_keep(r, mask, cfg)  # [B, T]
        clipped = (surr2.detach() < surr1.detach()).to(mask.dtype) * keep  # min took the clipped branch
    per_token = pg  # [B, T]
    kl = torch.zeros_like(pg)
    if cfg.kl_coef > 0:
        if ref_logprobs is None:
            raise ValueError("kl_coef > 0 needs ref_logprobs")
        delta = ref_logprobs - logprobs  # [B, T]; k3 estimator: e^d - d - 1 >= 0, unbiased for KL(pi||ref)
        kl = (torch.exp(delta) - delta - 1.0) * mask
        per_token = per_token + cfg.kl_coef * kl
    loss = aggregate(per_token, keep * weights[:, None], mask, cfg, normalizer)
    n_tok = mask.sum().clamp(min=1.0)
    stats = {
        "clip_frac": clipped.sum() / n_tok,
        "masked_frac": (mask - keep).sum() / n_tok,
        "kl": kl.detach().sum() / n_tok,
        "ratio_mean": (r * mask).sum() / n_tok,
    }
    return loss, stats
