"""Device choice: ``auto`` follows what torch sees, ``cuda`` without a GPU fails with a clear error, and the
actors that run on the GPU split one GPU between them."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from trainers.config import ServeConfig, TrainerConfig
from trainers.devices import gpu_share, resolve_device
from trainers.exceptions import BackendUnavailable


def test_auto_is_cuda_exactly_when_torch_sees_a_gpu() -> None:
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == "cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_says_so() -> None:
    with pytest.raises(BackendUnavailable, match="no CUDA GPU"):
        resolve_device("cuda")


def test_the_config_defaults_to_auto_and_refuses_unknown_devices() -> None:
    assert TrainerConfig().device == "auto" and ServeConfig().device == "auto"
    with pytest.raises(ValidationError):
        TrainerConfig(device="tpu")


@pytest.mark.parametrize(
    ("device", "backend", "workers", "expected"),
    [
        ("cpu", "hf", 2, (0.0, 0.0)),  # nothing on the GPU
        ("cpu", "vllm", 1, (0.0, 1.0)),  # the vLLM engine alone
        ("cuda", "hf", 1, (0.5, 0.5)),  # learner and an hf worker share it
        ("cuda", "vllm", 3, (0.25, 0.25)),
        ("cuda", "auto", 0, (1.0, 0.0)),  # live mode: the learner alone holds it
        ("cpu", "auto", 0, (0.0, 0.0)),
    ],
)
def test_gpu_actors_split_one_gpu(device: str, backend: str, workers: int, expected: tuple) -> None:
    learner, worker = gpu_share(device, backend, workers)  # type: ignore[arg-type]
    assert (learner, worker) == expected
    assert learner + worker * workers <= 1.0


def test_the_model_config_is_read_without_importing_torch() -> None:
    import subprocess
    import sys

    code = "import sys, trainers.config; assert 'torch' not in sys.modules, 'torch imported'"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0
