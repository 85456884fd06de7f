"""The pieces the two policy losses share: the clip and mask settings, the clipped surrogate, the
IcePop keep-mask and the aggregation of per-token losses into one scalar.

Shapes: B samples, T completion positions (right-padded).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch


@dataclass(frozen=True)
class ClipConfig:
    clip_low: float = 0.2
    clip_high: float = 0.28
    mask_low: float = 0.5
    mask_high: float = 2.0
    agg: Literal["token_mean", "seq_mean"] = "token_mean"


def clipped_surrogate(
    ratio: torch.Tensor, advantages: torch.Tensor, cfg: ClipConfig
) -> tuple[torch.Tensor, torch.Tensor]:
    """(unclipped, clipped) surrogates ``r * A`` and ``clip(r, 1 - clip_low, 1 + clip_high) * A``, [B, T]."""
    adv = advantages[:, None]  # [B, 1]
    surr1 = ratio * adv
    surr2 = torch.clamp(ratio, 1.0 - cfg.clip_low, 1.0 + cfg.clip_high) * adv
    return surr1, surr2


def icepop_keep(ratio: torch.Tensor, mask: torch.Tensor, cfg: ClipConfig) -> torch.Tensor:
    """1.0 on completion tokens whose ratio lies in [mask_low, mask_high], else 0.0 (no gradient), [B, T]."""
    return ((ratio >= cfg.mask_low) & (ratio <= cfg.mask_high)).to(mask.dtype) * mask


def aggregate(
    per_token: torch.Tensor,
    token_w: torch.Tensor,
    mask: torch.Tensor,
    cfg: ClipConfig,
    normalizer: float | None,
) -> torch.Tensor:
    """The scalar loss: token mean over the batch (``normalizer`` tokens when given), or the mean over
    samples of each sample's token mean (``normalizer`` samples when given)."""
    if cfg.agg == "token_mean":
        denom = normalizer if normalizer is not None else mask.sum().clamp(min=1.0)
        return (per_token * token_w).sum() / denom
    lengths = mask.sum(-1).clamp(min=1.0)  # [B]
    return ((per_token * token_w).sum(-1) / lengths).sum() / (normalizer or max(1, per_token.shape[0]))
