"""The vLLM weight-update path: the wire form of tensors (CPU, always runs) and a partial update on a real
engine (skips without vLLM and CUDA, like the rest of the vLLM contract)."""

from __future__ import annotations

import pytest
import torch

from trainers.rollout.vllm_worker import pack_tensors, unpack_tensors
from trainers.tiny_model import build_tiny


def test_tensors_survive_the_wire_in_every_dtype() -> None:
    state = {
        "a": torch.randn(3, 4),
        "b": torch.randn(5).to(torch.bfloat16),
        "c": torch.randn(2, 2).half().t(),  # not contiguous
        "d": torch.empty(0, 7),
    }
    packed = pack_tensors(state)
    assert all(isinstance(raw, bytes) for *_, raw in packed)  # plain bytes: no pickling on the wire
    back = dict(unpack_tensors(packed))
    for name, t in state.items():
        assert back[name].dtype == t.dtype and back[name].shape == t.shape and torch.equal(back[name], t)


def test_unknown_dtype_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown dtype"):
        unpack_tensors([("x", "Tensor", [1], b"\0\0\0\0")])


@pytest.mark.gpu
def test_partial_update_on_a_real_engine() -> None:
    pytest.importorskip("vllm")
    if not torch.cuda.is_available():
        pytest.skip("vLLM backend needs CUDA")
    from trainers.rollout.vllm_backend import VLLMBackend

    model, tok = build_tiny()
    backend = VLLMBackend(model, tok, version=0)
    name = "model.layers.0.mlp.down_proj.weight"
    new = model.state_dict()[name] * 2
    backend.load_weights({name: new}, version=1)
    sums = backend.llm.collective_rpc("sluice_weight_sums", args=([name],))
    assert all(abs(s[name] - float(new.sum())) < 1e-2 for s in sums)
    assert backend.policy_version == 1
