"""What the learner actors share about their state: the model loaded onto their device, the optimizer
restored from a checkpoint, the checkpoint of weights and optimizer, and the policy version they report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from trainers.checkpoint import TrainerState, read_optimizer_state, save_checkpoint
from trainers.config import TinyModelConfig
from trainers.devices import Device
from trainers.tiny_model import load_model


def restore_optimizer(opt: torch.optim.Optimizer, resume_from: str | None) -> None:
    """Load the optimizer state saved with the checkpoint at ``resume_from``, when there is one."""
    if resume_from is not None:
        opt_state = read_optimizer_state(Path(resume_from))
        if opt_state is not None:
            opt.load_state_dict(opt_state)


class CheckpointedLearner:
    """Saves ``model``, ``tokenizer`` and ``opt`` with the trainer state, keeping ``keep_checkpoints``."""

    model: Any
    tokenizer: Any
    opt: torch.optim.Optimizer
    version: int
    keep_checkpoints: int
    device: Device

    def load_on_device(self, model_source: str, tiny: TinyModelConfig, seed: int, device: Device) -> Any:
        """A learner actor's torch settings (one thread, seeded), its tokenizer, and its model on ``device``."""
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        self.device = device
        model, self.tokenizer = load_model(model_source, tiny)
        return model.to(device)

    def save(self, output_dir: str, state: TrainerState) -> str:
        state = state.model_copy(update={"policy_version": self.version})
        path = save_checkpoint(  # a peft model saves its adapters only; --resume loads them on the base
            Path(output_dir),
            self.model,
            self.tokenizer,
            state,
            self.opt.state_dict(),
            keep=self.keep_checkpoints,
        )
        return str(path)

    def get_version(self) -> int:
        return self.version
