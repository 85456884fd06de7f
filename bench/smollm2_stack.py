"""The stack the SmolLM2 loop benchmarks run: the embedded default config on free local ports, one stage
worker, the live trainer pushing to the stack's own ``serve-model``, everything under one temporary folder.

``smollm2_stack`` writes what ``bench.live_loop``, ``bench.tenant_policies`` and ``bench.governed_loop``
share (broker, topics, proxy, tenants' keys and opt-in, stages, rewards, sink, the trainer's loop and its
policy server); each benchmark passes only what it measures differently: its backends, tenants, the
trainer's promotion and learning settings, and its extra serve and live sections. ``live_and_control``
adds the control arm: a second server with the same base weights that never takes a push.

    python -m bench.live_loop --quick
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from app.config import DEFAULT_CONFIG
from infra.broker import free_port
from trainers.smollm2 import SMOLLM2_NAME, smollm2_dir


def model_source(name: str) -> str:
    """The trainer and the servers load SmolLM2 from its cached HF directory (made once from the wheel)."""
    return str(smollm2_dir()) if name == SMOLLM2_NAME else name


def policy_backend(
    name: str, port: int, models: list[str], model_version: str | None = None
) -> dict[str, Any]:
    """A proxy backend on a local policy server that returns token ids (the trainer needs them)."""
    backend: dict[str, Any] = {"name": name, "base_url": f"http://127.0.0.1:{port}/v1", "models": models,
                               "return_token_ids": True}  # fmt: skip
    if model_version is not None:
        backend["model_version"] = model_version
    return backend


def smollm2_stack(
    tmp: Path,
    backends: list[dict[str, Any]],
    keys: dict[str, str],
    opt_in: dict[str, bool],
    trainer: dict[str, Any],
    serve: dict[str, Any] | None = None,
    live: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The stack's config. ``backends[0]`` is the server the stack starts and the trainer pushes to; ``keys``
    maps tenant -> API key, ``opt_in`` tenant -> training opt-in. ``trainer`` holds the benchmark's own
    trainer settings (``model`` by name); ``live`` must hold ``update_samples`` and ``lora_rank`` (the update
    cap and the LoRA alpha are derived from them)."""
    live = dict(live or {})
    served = backends[0]
    data = yaml.safe_load(DEFAULT_CONFIG.read_text())
    data["broker"]["bootstrap_servers"] = f"127.0.0.1:{free_port()}"
    data["topics"]["partitions"] = 2
    data["proxy"].update(
        port=free_port(),
        spool_dir=str(tmp / "spool"),
        backends=backends,
        api_keys=[{"key": k, "tenant": t, "data_class": "internal", "consent_training": True}
                  for t, k in keys.items()],
    )  # fmt: skip
    data["eligibility"]["tenants"] = {
        t: {"training_opt_in": o, "retention_days": 30} for t, o in opt_in.items()
    }
    data["stages"].update(data_dir=str(tmp / "stages"), workers=1)
    data["rewards"] = {**data["rewards"], "wait_s": 2}
    data["sink"] = {**data.get("sink", {}), "database": str(tmp / "sluice.duckdb"), "query_port": free_port()}
    data["up"] = {"log_file": str(tmp / "logs" / "up.log"), "local_model_backend": served["name"]}
    data["trainer"] = {
        **data.get("trainer", {}),
        "mode": "live",
        **trainer,
        "model": model_source(trainer["model"]),
        "output_dir": str(tmp / "trainer"),
        "policy_servers": [served["base_url"].removesuffix("/v1")],
        "poll_timeout_s": 0.5,
        "checkpoint_every": 10_000,  # the benchmarks measure the loop, not checkpoints
        "progress": False,
        "serve": {"model_name": "smollm2", "max_batch": 32, "keep_versions": 2, **(serve or {}),
                  "events_log": str(tmp / "serve" / f"{served['name']}_events.jsonl")},
        "live": {"group_wait_s": 30, "update_wait_s": 5, "max_update_samples": 2 * live["update_samples"],
                 "lora_alpha": 2.0 * live["lora_rank"], **live},
    }  # fmt: skip
    return data


def write_yaml(data: dict[str, Any], path: Path) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def live_and_control(
    tmp: Path,
    keys: dict[str, str],
    opt_in: dict[str, bool],
    trainer: dict[str, Any],
    serve: dict[str, Any] | None = None,
    live: dict[str, Any] | None = None,
) -> tuple[Path, Path]:
    """The stack's config (backend ``live``: the server the stack starts, model ``smollm2-live*``) and the
    control server's copy of it (backend ``control``, ``smollm2-control``: same weights, never pushed to)."""
    live_port, control_port = free_port(), free_port()
    backends = [
        policy_backend("live", live_port, ["smollm2-live"], model_version="live"),
        policy_backend("control", control_port, ["smollm2-control"], model_version="control"),
    ]
    data = smollm2_stack(tmp, backends, keys, opt_in, {**trainer, "models": ["smollm2-live*"]}, serve, live)
    control = json.loads(json.dumps(data))
    control["trainer"]["serve"].update(
        events_log=str(tmp / "serve" / "control_events.jsonl"), port=control_port
    )
    return write_yaml(data, tmp / "sluice.yaml"), write_yaml(control, tmp / "control.yaml")
