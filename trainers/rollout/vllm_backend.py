"""GPU rollouts with an in-process vLLM engine (``pip install .[vllm]``), weights updated in place.

vLLM is imported here only, lazily, and this module is imported only when the backend is chosen: the
trainer package never needs vLLM on a CPU machine. Sampling-time logprobs come from
``SamplingParams(logprobs=0)`` (the sampled token's logprob). Weight updates go through the engine's
``collective_rpc`` to each worker's ``model.load_weights`` (vLLM >= 0.8, V1 engine); older engines fall back
to the driver worker's model. Logprobs are requested in "processed" mode (after temperature) where the engine
supports it, to match the hf backend's contract. Written against vLLM's documented API; not run on this
CPU-only machine (the contract tests skip without vLLM and CUDA).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping
from typing import Any

import torch

from trainers.exceptions import BackendUnavailable
from trainers.rollout.base import Completion, RolloutBackend, SamplingSpec


def _load_weights_on_worker(worker: Any, items: list[tuple[str, torch.Tensor]]) -> None:
    worker.model_runner.model.load_weights(weights=items)


class VLLMBackend(RolloutBackend):
    name = "vllm"

    def __init__(
        self, model: torch.nn.Module, tokenizer: Any, version: int = 0, gpu_memory_utilization: float = 0.4
    ) -> None:
        try:
            import vllm
        except ImportError as err:
            raise BackendUnavailable(
                "backend vllm needs the optional extra: pip install 'sluice[vllm]'"
            ) from err
        if not torch.cuda.is_available():
            raise BackendUnavailable("backend vllm needs CUDA; use backend: hf on this machine")
        self._dir = tempfile.TemporaryDirectory(prefix="sluice-vllm-")
        model.save_pretrained(self._dir.name)
        tokenizer.save_pretrained(self._dir.name)
        self._vllm = vllm
        self.tokenizer = tokenizer
        extra: dict[str, Any] = {}
        if "logprobs_mode" in {f.name for f in dataclasses.fields(vllm.EngineArgs)}:
            extra["logprobs_mode"] = "processed_logprobs"  # after temperature: what the token was drawn from
        self.llm = vllm.LLM(
            model=self._dir.name,
            dtype="float32" if next(model.parameters()).dtype == torch.float32 else "auto",
            gpu_memory_utilization=gpu_memory_utilization,
            enable_prefix_caching=True,
            skip_tokenizer_init=True,  # token ids in and out; our tokenizer decodes (vLLM cannot load CharTokenizer)
            **extra,
        )
        self._version = version

    @property
    def policy_version(self) -> int:
        return self._version

    def generate(self, prompts: list[list[int]], spec: SamplingSpec) -> list[list[Completion]]:
        params = self._vllm.SamplingParams(
            n=spec.n,
            temperature=spec.temperature,
            max_tokens=spec.max_tokens,
            seed=spec.seed,
            logprobs=0,
            stop_token_ids=[self.tokenizer.eos_token_id],
        )
        inputs = [{"prompt_token_ids": p} for p in prompts]
        outs = self.llm.generate(inputs, params, use_tqdm=False)
        result: list[list[Completion]] = []
        for out in outs:
            group = []
            for o in out.outputs:
                ids = list(o.token_ids)
                lps = [float(step[tok].logprob) for tok, step in zip(ids, o.logprobs or [], strict=True)]
                group.append(
                    Completion(
                        token_ids=ids,
                        logprobs=lps,
                        finish_reason="stop" if o.finish_reason == "stop" else "length",
                        text=self.tokenizer.decode(ids, skip_special_tokens=True),
                        policy_version=self._version,
                    )
                )
            result.append(group)
        return result

    def load_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        items = [(k, v.cuda()) for k, v in state_dict.items()]
        if hasattr(self.llm, "collective_rpc"):
            self.llm.collective_rpc(_load_weights_on_worker, args=(items,))
        else:  # older engines: one in-process driver worker
            self.llm.llm_engine.model_executor.driver_worker.model_runner.model.load_weights(items)
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()  # cached KV of old weights must not serve new ones
        self._version = version
