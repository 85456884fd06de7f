"""Policy versions as LoRA adapters in a running vLLM OpenAI server: the GPU path to several versions at once.

vLLM serves many LoRA adapters over one base model, rows of different adapters in one batch (punica
kernels), and picks the adapter per request by the request's ``model`` field. The server must be started
with ``--enable-lora`` (and ``--max-lora-rank``/``--max-loras`` large enough) and with the environment
variable ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``, which adds two endpoints:

    POST /v1/load_lora_adapter    {"lora_name": NAME, "lora_path": DIR}   (a peft adapter directory)
    POST /v1/unload_lora_adapter  {"lora_name": NAME}

A policy version ``v`` is the adapter ``<prefix><v>`` (``policy-v3``); a request for version ``v`` sends
``model: "policy-v3"``; a request for no version, or for one not loaded, sends the base model's name (the
same fallback as serve-model: the agent's call never fails for a version name). Standard library HTTP only.

    lora = VllmLora("http://127.0.0.1:8000", base_model="HuggingFaceTB/SmolLM2-135M-Instruct")
    lora.load("3", "/abs/adapters/v3")        # peft save_pretrained output, on the vLLM machine
    body["model"] = lora.model_for("3")       # "policy-v3"
    lora.unload("3")
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from sluice.policy_client import PolicyClientError, server_root

LOAD_PATH = "/v1/load_lora_adapter"
UNLOAD_PATH = "/v1/unload_lora_adapter"
MODELS_PATH = "/v1/models"
RUNTIME_FLAG = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"


class LoraError(PolicyClientError):
    """vLLM refused a load or unload (or could not be reached: status 0)."""


class VllmLora:
    """The adapters one vLLM server holds, named after the policy versions they are."""

    def __init__(
        self, base_url: str, base_model: str, prefix: str = "policy-v", timeout_s: float = 120.0
    ) -> None:
        self.url = server_root(base_url)
        self.base_model, self.prefix, self.timeout_s = base_model, prefix, timeout_s
        self.loaded: dict[str, str] = {}  # version -> adapter path, as loaded through this client

    def adapter_name(self, version: str) -> str:
        return f"{self.prefix}{version}"

    def version_of(self, model: str) -> str | None:
        """The policy version an adapter name stands for (None: the base model or another name)."""
        return model[len(self.prefix) :] if model.startswith(self.prefix) and model != self.prefix else None

    def model_for(self, version: str | None) -> str:
        """The ``model`` a request for ``version`` sends: its adapter when loaded, else the base model."""
        loaded = version is not None and version in self.loaded
        return self.adapter_name(version) if loaded and version is not None else self.base_model

    def load(self, version: str, lora_path: str) -> str:
        """Load the adapter directory ``lora_path`` (a path on the vLLM machine) as ``version``."""
        name = self.adapter_name(version)
        self._post(LOAD_PATH, {"lora_name": name, "lora_path": lora_path})
        self.loaded[version] = lora_path
        return name

    def unload(self, version: str) -> None:
        self._post(UNLOAD_PATH, {"lora_name": self.adapter_name(version)})
        self.loaded.pop(version, None)

    def served(self) -> dict[str, str]:
        """Every adapter the server lists (``GET /v1/models``, entries with a parent) -> its path, by version."""
        data = self._call("GET", MODELS_PATH)
        out = {}
        for card in data.get("data", []):
            version = self.version_of(str(card.get("id", "")))
            if version is not None and card.get("parent"):
                out[version] = str(card.get("root") or "")
        return out

    def sync(self) -> dict[str, str]:
        """Take the server's list as the truth (after a restart of either side)."""
        self.loaded = self.served()
        return dict(self.loaded)

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        return self._call("POST", path, json.dumps(body).encode(), {"content-type": "application/json"})

    def _call(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> Any:
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            message = _error_message(err.read())
            if err.code == 404 and path in (LOAD_PATH, UNLOAD_PATH):
                message = f"{message} (is the server started with {RUNTIME_FLAG}=True and --enable-lora?)"
            raise LoraError(self.url, err.code, str(message)[:500]) from None
        except OSError as err:
            raise LoraError(self.url, 0, str(err)) from None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")  # load/unload answer with a plain "Success: ..." line


def _error_message(raw: bytes) -> str:
    """vLLM's error body: ``{"error": {"message": ...}}`` (newer) or ``{"message": ...}`` (older)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")
    if isinstance(data, dict):
        inner = data.get("error")
        if isinstance(inner, dict) and "message" in inner:
            return str(inner["message"])
        if "message" in data:
            return str(data["message"])
    return raw.decode(errors="replace")
