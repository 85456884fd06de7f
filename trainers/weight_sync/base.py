"""The weight-sync plug point: the learner publishes (state_dict, version); workers fetch what is newer.

Implementations: Ray's object store (``ray_object_store.py``). A NCCL broadcast for GPU clusters would be
another file implementing the same three methods.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

import torch


class WeightSync(ABC):
    @abstractmethod
    def publish(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Learner side: make these weights the latest."""

    @abstractmethod
    def fetch(self, newer_than: int) -> tuple[dict[str, torch.Tensor], int] | None:
        """Worker side: the latest weights if their version is above ``newer_than``, else None."""
