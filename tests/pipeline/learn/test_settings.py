"""The learning demo's config: the embedded default with SmolLM2 serving and the trainer in live mode."""

from __future__ import annotations

from pathlib import Path

import yaml

from app.config import DEFAULT_CONFIG, SluiceConfig
from pipeline.learn.settings import AGENT_MODEL, LearnSettings, learning_config


def test_learning_config_routes_the_agents_to_a_live_trained_server(tmp_path: Path) -> None:
    base = yaml.safe_load(DEFAULT_CONFIG.read_text())
    data = learning_config(base, tmp_path, LearnSettings(group_size=4, lora_rank=8))
    cfg = SluiceConfig.model_validate(data)
    backend = cfg.proxy.backend_for(AGENT_MODEL)
    assert backend is not None and backend.name == cfg.up.local_model_backend
    port = cfg.local_model_port()
    assert cfg.trainer.serve.port == port and cfg.trainer.policy_server_urls() == [f"http://127.0.0.1:{port}"]
    assert cfg.trainer.resolved_mode == "live" and cfg.trainer.live.lora_rank == 8
    assert cfg.trainer.group_size == 4 and Path(cfg.trainer.model).is_dir()  # SmolLM2's cached HF directory
    assert cfg.trainer.output_dir == tmp_path / "trainer"
    # the rest of the config is the user's: tenants, keys and eligibility are untouched
    assert data["proxy"]["api_keys"] == base["proxy"]["api_keys"]
    assert data["eligibility"] == base["eligibility"]
    assert base["trainer"].get("mode") is None  # the input is not modified
