"""Weight sync through Ray's object store: the learner ``ray.put``s its state_dict once per update and a
tiny board actor holds the reference to the newest one; rollout workers fetch it when it is newer than
what they hold. Old versions are freed as soon as the board lets go of their reference.

Measured on this machine (FIELD-NOTES): passing a 10 MB state_dict between actors takes ~12-60 ms.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ray
import torch

from trainers.weight_sync.base import WeightSync


@ray.remote(num_cpus=0)
class WeightBoard:
    """Holds the newest weights' ObjectRef (wrapped in a list so Ray does not resolve it)."""

    def __init__(self) -> None:
        self.version = -1
        self.refs: list[Any] = []

    def set(self, refs: list[Any], version: int) -> None:
        if version > self.version:
            self.version, self.refs = version, refs

    def get(self) -> tuple[int, list[Any]]:
        return self.version, self.refs


class RayObjectStoreWeightSync(WeightSync):
    """Picklable handle: create once in the driver and pass to the learner and the workers."""

    def __init__(self, board: Any | None = None) -> None:
        self.board = board if board is not None else WeightBoard.remote()

    def publish(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        cpu = {k: v.detach().to("cpu", copy=True) for k, v in state_dict.items()}
        ref = ray.put(cpu)
        ray.get(self.board.set.remote([ref], version))

    def fetch(self, newer_than: int) -> tuple[dict[str, torch.Tensor], int] | None:
        version, refs = ray.get(self.board.get.remote())
        if version <= newer_than or not refs:
            return None
        return ray.get(refs[0]), version
