"""The evolve section: off by default, validated, and `sluice up --evolve` adds the scheduler service."""

from __future__ import annotations

import pytest

from app.config import SluiceConfig, parse_config
from app.up import service_specs
from sluice.errors import ConfigError


def test_off_by_default_and_the_flag_adds_the_service() -> None:
    cfg = SluiceConfig()
    assert cfg.evolve.enabled is False
    assert "evolve" not in [s.name for s in service_specs(cfg, None, with_trainer=False)]
    specs = service_specs(cfg, None, with_trainer=False, with_evolve=True)
    evolve = next(s for s in specs if s.name == "evolve")
    assert evolve.argv[-2:] == ["evolve", "serve"]
    on = parse_config({"evolve": {"enabled": True}})
    assert "evolve" in [s.name for s in service_specs(on, None, with_trainer=False)]


def test_the_section_is_validated() -> None:
    cfg = parse_config(
        {"evolve": {"graders": {"support": {"reward": {"kind": "regex", "pattern": "^ok"}}},
                    "canary": {"share": 0.3, "test": {"alpha": 0.01}}}}
    )  # fmt: skip
    assert cfg.evolve.canary.test.alpha == 0.01 and "support" in cfg.evolve.graders
    with pytest.raises(ConfigError):
        parse_config({"evolve": {"canary": {"share": 1.5}}})
    with pytest.raises(ConfigError):
        parse_config({"evolve": {"limits": {"max_canarys": 2}}})
