"""Where the trainer's and the model server's torch work runs.

``auto`` is CUDA when this process sees a GPU, else the CPU; ``cuda`` without a visible GPU is an error that
says so before anything is built. The choice is resolved once, in the process that starts the actors (a
Ray actor given no GPU sees none), and the resolved name travels to them.
"""

from __future__ import annotations

from typing import Literal

from trainers.exceptions import BackendUnavailable

DeviceChoice = Literal["auto", "cpu", "cuda"]
Device = Literal["cpu", "cuda"]


def resolve_device(choice: DeviceChoice) -> Device:
    """The concrete device for ``choice`` in this process."""
    import torch  # here, not at the top: the config that names a device is read by torch-free processes

    has_cuda = torch.cuda.is_available()
    if choice == "auto":
        return "cuda" if has_cuda else "cpu"
    if choice == "cuda" and not has_cuda:
        raise BackendUnavailable("device: cuda, but torch sees no CUDA GPU here; use auto or cpu")
    return choice


def gpu_share(device: Device, backend: str, rollout_workers: int) -> tuple[float, float]:
    """Ray GPU requests (learner, each rollout worker): the actors that run on the GPU split one GPU
    evenly, so a one-GPU machine holds them all; an actor on the CPU asks for none."""
    learner_on_gpu = device == "cuda"
    workers_on_gpu = rollout_workers > 0 and (backend == "vllm" or device == "cuda")
    users = int(learner_on_gpu) + (rollout_workers if workers_on_gpu else 0)
    if users == 0:
        return 0.0, 0.0
    share = 1.0 / users
    return (share if learner_on_gpu else 0.0), (share if workers_on_gpu else 0.0)
