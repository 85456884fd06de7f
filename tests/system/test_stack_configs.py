"""The configs the system tests start a stack from: they load, and carry the proxy settings they are given
(fast: nothing is started)."""

from __future__ import annotations

from pathlib import Path

from app.config import DEFAULT_CONFIG, load_config
from tests.system.conftest import late_reward_config, stack_config


def test_stack_config_writes_the_proxy_settings_it_is_given(tmp_path: Path) -> None:
    (tmp_path / "short").mkdir()
    (tmp_path / "plain").mkdir()
    short = load_config(stack_config(tmp_path / "short", wal_segment_max_age_s=5))
    plain = load_config(stack_config(tmp_path / "plain"))
    assert short.proxy.wal_segment_max_age_s == 5
    default = load_config(DEFAULT_CONFIG).proxy.wal_segment_max_age_s
    assert plain.proxy.wal_segment_max_age_s == default != 5
    assert short.proxy.spool_dir == tmp_path / "short" / "spool"  # the settings it always makes stay
    assert short.proxy.port != plain.proxy.port


def test_late_reward_config_passes_its_proxy_settings_on(tmp_path: Path) -> None:
    path = late_reward_config(tmp_path, land_interval_s=0.5)
    cfg = load_config(path)
    assert cfg.proxy.land_interval_s == 0.5
    assert cfg.rewards.wait_s == 3600
