"""GPU rollouts with an in-process vLLM engine (``pip install .[vllm]``), weights updated in place.

vLLM is imported here only, lazily, and this module is imported only when the backend is chosen: the
trainer package never needs vLLM on a CPU machine. Sampling-time logprobs come from
``SamplingParams(logprobs=0)`` (the sampled token's logprob). Logprobs are requested in "processed" mode
(after temperature) where the engine supports it, to match the hf backend's contract.

Weight updates: the engine is built with ``worker_extension_cls`` (``vllm_worker.SluiceWorkerExtension``)
and ``load_weights`` calls ``LLM.collective_rpc("sluice_load_weights", args=(packed,))`` by method name, so
every worker loads the tensors into its model's own ``load_weights`` — no pickled function, so recent V1
engines need no ``VLLM_ALLOW_INSECURE_SERIALIZATION``. A partial state dict updates just those tensors.
Only after every worker succeeded is the version published: the engine's own weight-version tag
(``finish_weight_update(version)`` / ``get_weight_version()``) where the installed vLLM has it, else this
object's counter; the prefix cache is reset so KV computed by old weights never serves new ones. Engines
without ``collective_rpc`` fall back to the in-process driver worker. Written against vLLM's documented API
and not run here: this machine has no GPU (the contract tests skip without vLLM and CUDA).
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
from collections.abc import Mapping
from typing import Any

import torch

from trainers.exceptions import BackendUnavailable
from trainers.rollout.base import Completion, RolloutBackend, SamplingSpec
from trainers.rollout.vllm_worker import EXTENSION_CLASS, pack_tensors, unpack_tensors

log = logging.getLogger(__name__)


class VLLMBackend(RolloutBackend):
    name = "vllm"

    def __init__(
        self, model: torch.nn.Module, tokenizer: Any, version: int = 0, gpu_memory_utilization: float = 0.4
    ) -> None:
        try:
            import vllm
        except ImportError as err:
            raise BackendUnavailable(
                "backend vllm needs the optional extra: pip install 'sluice-rl[vllm]'"
            ) from err
        if not torch.cuda.is_available():
            raise BackendUnavailable("backend vllm needs CUDA; use backend: hf on this machine")
        self._dir = tempfile.TemporaryDirectory(prefix="sluice-vllm-")
        model.save_pretrained(self._dir.name)
        tokenizer.save_pretrained(self._dir.name)
        self._vllm = vllm
        self.tokenizer = tokenizer
        extra: dict[str, Any] = {}
        fields = {f.name for f in dataclasses.fields(vllm.EngineArgs)}
        if "logprobs_mode" in fields:
            extra["logprobs_mode"] = "processed_logprobs"  # after temperature: what the token was drawn from
        if "worker_extension_cls" in fields:
            extra["worker_extension_cls"] = EXTENSION_CLASS  # weight updates by method name
        self.llm = vllm.LLM(
            model=self._dir.name,
            dtype="float32" if next(model.parameters()).dtype == torch.float32 else "auto",
            gpu_memory_utilization=gpu_memory_utilization,
            enable_prefix_caching=True,
            skip_tokenizer_init=True,  # token ids in and out; our tokenizer decodes (vLLM cannot load CharTokenizer)
            **extra,
        )
        self._version = version
        self._by_name = "worker_extension_cls" in extra and hasattr(self.llm, "collective_rpc")

    @property
    def policy_version(self) -> int:
        return self._version

    def engine_weight_version(self) -> str | None:
        """The engine's own weight-version tag (None where this vLLM has none)."""
        tagged = self._engine_call("get_weight_version")
        return tagged if isinstance(tagged, str) else None

    def _engine_call(self, method: str, *args: Any) -> Any:
        """Call ``method`` on the LLM or its engine where this vLLM has it (None where it does not)."""
        for target in (self.llm, getattr(self.llm, "llm_engine", None)):
            fn = getattr(target, method, None)
            if callable(fn):
                return fn(*args)
        return None

    def _tag(self, version: int) -> None:
        """Publish the version: the engine's weight-version tag where it exists, always our counter."""
        try:
            self._engine_call("finish_weight_update", str(version))
        except (
            Exception
        ) as err:  # an engine whose update lifecycle wants more than the tag: ours still counts
            log.warning("vLLM weight-version tag not set (%s); serving version %d", err, version)
        self._version = version

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
        """Load a full or partial state dict on every worker, then publish ``version`` (never before)."""
        packed = pack_tensors(state_dict)
        if self._by_name:
            loaded = self.llm.collective_rpc("sluice_load_weights", args=(packed,))
            if any(n != len(packed) for n in loaded):
                raise RuntimeError(f"a vLLM worker loaded {loaded} of {len(packed)} tensors")
        else:  # older engines: one in-process driver worker
            model = self.llm.llm_engine.model_executor.driver_worker.model_runner.model
            model.load_weights(unpack_tensors(packed, next(model.parameters()).device))
        self._engine_call("reset_prefix_cache")  # cached KV of old weights must not serve new ones
        self._tag(version)
