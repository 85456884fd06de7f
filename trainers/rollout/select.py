"""Pick and build the rollout backend named in config (``auto``: vllm if importable and CUDA, else hf)."""

from __future__ import annotations

import importlib.util
from typing import Any, Literal

import torch

from trainers.exceptions import BackendUnavailable
from trainers.rollout.base import RolloutBackend


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None and torch.cuda.is_available()


def resolve_backend(kind: Literal["auto", "vllm", "hf"]) -> Literal["vllm", "hf"]:
    """The concrete backend; an explicit ``vllm`` that cannot run here fails now (before Ray starts)."""
    if kind == "auto":
        return "vllm" if vllm_available() else "hf"
    if kind == "vllm" and not vllm_available():
        raise BackendUnavailable("trainer.backend: vllm needs the vllm extra and a CUDA GPU; use hf or auto")
    return kind


def build_backend(
    kind: Literal["vllm", "hf"], model: torch.nn.Module, tokenizer: Any, version: int = 0
) -> RolloutBackend:
    if kind == "vllm":
        from trainers.rollout.vllm_backend import VLLMBackend  # lazy: vllm is an optional extra

        return VLLMBackend(model, tokenizer, version)
    from trainers.rollout.hf_backend import HFBackend

    return HFBackend(model, tokenizer, version)
