"""The locally built tiny model: deterministic, HF save/load, tokenizer class kept."""

from __future__ import annotations

from pathlib import Path

import torch

from trainers.config import TinyModelConfig
from trainers.tiny_model import CharTokenizer, build_tiny, load_model, load_tokenizer, render_chat


def test_seeded_and_small() -> None:
    a, tok = build_tiny()
    b, _ = build_tiny()
    c, _ = build_tiny(TinyModelConfig(seed=1))
    assert 1_500_000 < a.num_parameters() < 3_500_000
    assert torch.equal(a.model.embed_tokens.weight, b.model.embed_tokens.weight)
    assert not torch.equal(a.model.embed_tokens.weight, c.model.embed_tokens.weight)
    assert a.config.vocab_size == len(tok)


def test_tokenizer_round_trip_and_chat_template() -> None:
    _, tok = build_tiny()
    text = render_chat(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "reverse 12 é"}]
    )
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text.replace("é", "<|unk|>")
    assert (
        tok.apply_chat_template(
            [{"role": "system", "content": "be brief"}, {"role": "user", "content": "reverse 12 é"}],
            tokenize=False,
            add_generation_prompt=True,
        )
        == text
    )
    assert ids.count(tok.convert_tokens_to_ids("<|im_start|>")) == 3


def test_save_and_load_keep_weights_and_tokenizer_class(tmp_path: Path) -> None:
    model, tok = build_tiny()
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded, ltok = load_model(tmp_path)
    assert isinstance(load_tokenizer(tmp_path), CharTokenizer) and isinstance(ltok, CharTokenizer)
    assert ltok.eos_token_id == tok.eos_token_id and ltok.pad_token_id == tok.pad_token_id
    for (n, p), (_, q) in zip(model.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(p, q), n
