"""Weight sync within one process (learner and rollout backend side by side): a shared reference to the
newest state_dict. For single-process use, unit tests and debugging; the Ray runner uses the object store.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

import torch

from trainers.weight_sync.base import WeightSync


class InProcessWeightSync(WeightSync):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: dict[str, torch.Tensor] | None = None
        self._version = -1

    def publish(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        copy = {k: v.detach().clone() for k, v in state_dict.items()}
        with self._lock:
            if version > self._version:
                self._state, self._version = copy, version

    def fetch(self, newer_than: int) -> tuple[dict[str, torch.Tensor], int] | None:
        with self._lock:
            if self._state is None or self._version <= newer_than:
                return None
            return self._state, self._version
