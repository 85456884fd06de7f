"""Policy versions as LoRA adapters in vLLM: the name contract (always runs) and a real vLLM OpenAI server
loading, serving and unloading an adapter (skips without vLLM and CUDA, like the rest of the vLLM contract)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import torch

from infra.broker import free_port
from trainers.serving.vllm_lora import RUNTIME_FLAG, LoraError, VllmLora


def test_versions_map_to_adapter_names_and_unknown_ones_to_the_base_model() -> None:
    lora = VllmLora("http://127.0.0.1:1/v1", base_model="base")
    assert lora.url == "http://127.0.0.1:1" and lora.adapter_name("7") == "policy-v7"
    assert lora.version_of("policy-v7") == "7" and lora.version_of("base") is None
    assert lora.version_of("policy-v") is None
    assert lora.model_for(None) == "base" and lora.model_for("7") == "base"  # not loaded: the base answers
    lora.loaded["7"] = "/adapters/v7"
    assert lora.model_for("7") == "policy-v7"


def test_an_unreachable_server_is_status_zero() -> None:
    lora = VllmLora(f"http://127.0.0.1:{free_port()}", base_model="base", timeout_s=2)
    with pytest.raises(LoraError) as err:
        lora.load("1", "/nowhere")
    assert err.value.status == 0 and lora.loaded == {}


@pytest.mark.gpu
def test_adapters_load_serve_and_unload_on_a_real_vllm_server(tmp_path: Path) -> None:
    pytest.importorskip("vllm")
    peft = pytest.importorskip("peft")
    if not torch.cuda.is_available():
        pytest.skip("vLLM needs CUDA")
    from trainers.smollm2 import smollm2_dir
    from trainers.tiny_model import load_model

    base_dir = smollm2_dir()
    model, _ = load_model(str(base_dir))
    conf = peft.LoraConfig(r=8, lora_alpha=32, init_lora_weights=False,
                           target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])  # fmt: skip
    peft.get_peft_model(model, conf).save_pretrained(str(tmp_path / "v1"))  # random A and B: answers change
    port = free_port()
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(base_dir),
           "--served-model-name", "base", "--enable-lora", "--max-lora-rank", "8", "--max-model-len", "1024",
           "--gpu-memory-utilization", "0.3", "--enforce-eager", "--port", str(port)]  # fmt: skip
    log = (tmp_path / "vllm.log").open("wb")
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, RUNTIME_FLAG: "True"}
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            assert proc.poll() is None, (tmp_path / "vllm.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "vLLM did not start within 600 s"
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        lora = VllmLora(url, base_model="base")
        assert lora.load("1", str(tmp_path / "v1")) == "policy-v1"
        assert lora.served() == {"1": str(tmp_path / "v1")}

        def answer(model: str) -> str:
            body = {"model": model, "prompt": "The capital of France is", "max_tokens": 8, "temperature": 0}
            r = httpx.post(url + "/v1/completions", json=body, timeout=120)
            assert r.status_code == 200, r.text
            return r.json()["choices"][0]["text"]

        base_text, adapted = answer(lora.model_for(None)), answer(lora.model_for("1"))
        assert adapted != base_text and answer(lora.model_for("2")) == base_text  # "2" not loaded: the base
        with pytest.raises(LoraError):  # one name, one adapter
            lora.load("1", str(tmp_path / "v1"))
        lora.unload("1")
        assert lora.served() == {} and lora.model_for("1") == "base"
        with pytest.raises(LoraError):
            lora.unload("1")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
