"""A short supervised warm-up that teaches the tiny model a toy task's answer *format*, not the task.

Targets are random digit strings of the reference's length followed by the stop token, so the warmed model
answers "reverse 123" with some three digits and stops, but no better than chance. RL then starts from a
policy with a realistic base rate (~10% exact on one digit), like RL on a pretrained LM, instead of from a
uniform random init where almost every group has zero reward variance. Deterministic from its seed.

    python -m bench.trainer        # builds one with this and starts both trainers from it
"""

from __future__ import annotations

import random
from pathlib import Path

import torch

from trainers.config import TaskConfig, TinyModelConfig
from trainers.tasks.registry import build_task
from trainers.tiny_model import build_tiny, render_chat


def warm_up_format(
    out_dir: Path,
    task_cfg: TaskConfig,
    tiny: TinyModelConfig | None = None,
    steps: int = 150,
    batch: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
) -> tuple[Path, float]:
    """Train, save model + tokenizer to ``out_dir`` (HF format); returns (out_dir, final loss)."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    model, tok = build_tiny(tiny)
    model.train()
    task = build_task(task_cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    loss_value = float("nan")
    for _ in range(steps):
        rows, targets = [], []
        for _ in range(batch):
            messages, reference = task.make_prompt(rng)
            prompt = tok(render_chat(messages), add_special_tokens=False)["input_ids"]
            answer = "".join(rng.choice("0123456789") for _ in reference)
            target = tok(answer, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
            rows.append(prompt + target)
            targets.append((len(prompt), len(target)))
        width = max(map(len, rows))
        ids = torch.full((batch, width), tok.pad_token_id)
        labels = torch.full((batch, width), -100)
        attn = torch.zeros((batch, width), dtype=torch.long)
        for i, (row, (p, n)) in enumerate(zip(rows, targets, strict=True)):
            ids[i, : len(row)] = torch.tensor(row)
            attn[i, : len(row)] = 1
            labels[i, p : p + n] = torch.tensor(row[p : p + n])
        loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_value = float(loss.detach())
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir, loss_value
