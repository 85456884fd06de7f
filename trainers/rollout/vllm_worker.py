"""The vLLM worker side of a weight update: a worker extension (``worker_extension_cls``) whose methods the
engine calls by name through ``LLM.collective_rpc("sluice_load_weights", ...)``.

Calling a method by name is what keeps updates working on recent V1 engines: they refuse to run a pickled
function over ``collective_rpc`` unless ``VLLM_ALLOW_INSECURE_SERIALIZATION=1`` is set, which Sluice never
asks for. Tensors cross the process boundary as plain bytes with their dtype and shape (msgpack carries
bytes on every vLLM version), are rebuilt on the worker, moved to its device and handed to the model's own
``load_weights`` (which maps checkpoint names onto vLLM's fused layers).

Pure helpers (``pack_tensors`` / ``unpack_tensors``) are importable without vLLM and unit-tested on CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

EXTENSION_CLASS = "trainers.rollout.vllm_worker.SluiceWorkerExtension"

# (name, dtype name, shape, raw bytes): what one tensor is on the wire.
Packed = tuple[str, str, list[int], bytes]


def pack_tensors(state_dict: Mapping[str, torch.Tensor]) -> list[Packed]:
    out: list[Packed] = []
    for name, tensor in state_dict.items():
        t = tensor.detach().to("cpu").contiguous()
        raw = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""  # any dtype, bf16 included
        out.append((name, str(t.dtype).removeprefix("torch."), list(t.shape), raw))
    return out


def unpack_tensors(
    packed: list[Packed], device: torch.device | str = "cpu"
) -> list[tuple[str, torch.Tensor]]:
    out = []
    for name, dtype_name, shape, raw in packed:
        dtype = getattr(torch, dtype_name)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"{name}: unknown dtype {dtype_name!r}")
        flat = (
            torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
        )
        out.append((name, flat.view(dtype).reshape(shape).to(device)))
    return out


class SluiceWorkerExtension:
    """Mixed into vLLM's worker class by the engine (``worker_extension_cls``); ``self`` is the worker."""

    model_runner: Any
    device: Any

    def sluice_load_weights(self, packed: list[Packed]) -> int:
        """Load these tensors into the worker's model; returns how many were loaded."""
        device = getattr(self, "device", None) or next(self.model_runner.model.parameters()).device
        weights = unpack_tensors(packed, device)
        self.model_runner.model.load_weights(weights=weights)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return len(weights)

    def sluice_weight_sums(self, names: list[str]) -> dict[str, float]:
        """Sum of each named parameter as the worker holds it (tests check an update landed)."""
        params = dict(self.model_runner.model.named_parameters())
        return {n: float(params[n].float().sum()) for n in names if n in params}
