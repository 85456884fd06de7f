"""CPU or GPU rollouts (on the model's device) with torch/transformers: always available, no extra dependency.

Uses the batched KV-cache decode loop of ``trainers.generation`` instead of ``model.generate`` so that every
token comes with its sampling-time logprob, and all n x prompts rows decode in one batch.

    python -m pytest tests/trainers/rollout/test_backend_contract.py
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from trainers.generation import GenRequest, generate
from trainers.rollout.base import Completion, RolloutBackend, SamplingSpec


class HFBackend(RolloutBackend):
    name = "hf"

    def __init__(self, model: torch.nn.Module, tokenizer: Any, version: int = 0) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self._version = version
        self._stop = frozenset({tokenizer.eos_token_id})

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def policy_version(self) -> int:
        return self._version

    def generate(self, prompts: list[list[int]], spec: SamplingSpec) -> list[list[Completion]]:
        gen = torch.Generator().manual_seed(spec.seed) if spec.seed is not None else None
        rows = [
            GenRequest(p, spec.max_tokens, spec.temperature, generator=gen, stop_ids=self._stop)
            for p in prompts
            for _ in range(spec.n)
        ]
        results = generate(self.model, rows, self.tokenizer.pad_token_id)
        texts = self.tokenizer.batch_decode([r.token_ids for r in results], skip_special_tokens=True)
        out: list[list[Completion]] = []
        for i in range(len(prompts)):
            group = []
            for j in range(spec.n):
                r = results[i * spec.n + j]
                group.append(
                    Completion(
                        token_ids=r.token_ids,
                        logprobs=r.logprobs,
                        finish_reason=r.finish_reason,
                        text=texts[i * spec.n + j],
                        policy_version=self._version,
                    )
                )
            out.append(group)
        return out

    @torch.no_grad()
    def load_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        self.model.load_state_dict(dict(state_dict))
        self._version = version
