"""Trainer config: cross-field rules fail fast with the field and the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import parse_config
from sluice.errors import ConfigError
from trainers.ray_session import ray_temp_dir


@pytest.mark.parametrize(
    ("trainer", "message"),
    [
        ({"mask_low": 0.9}, "mask_low must be <= 1 - clip_low"),
        ({"mask_high": 1.1}, "mask_high must be >= 1 + clip_high"),
        ({"group_size": 2, "mode": "resample"}, "include_logged needs group_size >= 3"),
        ({"kl_coef": 0.1}, "kl_coef > 0 in live mode needs live.lora_rank > 0"),
        (
            {"live": {"update_samples": 10, "max_update_samples": 5}},
            "max_update_samples must be >= update_samples",
        ),
        ({"rollout_workers": 2, "num_cpus": 2}, "cannot hold 2 rollout workers"),
        ({"backend": "tpu"}, "trainer.backend"),
        ({"task": {"kind": "reverse_digits", "min_digits": 4, "max_digits": 2}}, "min_digits"),
        ({"task": {"reward": {"kind": "regex", "pattern": "("}}}, "regular expression"),
        ({"tiny": {"hidden_size": 100, "num_heads": 6}}, "multiple of num_heads"),
    ],
)
def test_bad_trainer_config(trainer: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"trainer": trainer})
    assert message in str(err.value)


def test_auto_mode_is_live_for_traffic_and_resample_for_tasks_that_make_prompts() -> None:
    assert parse_config({}).trainer.resolved_mode == "live"
    toy = {"trainer": {"task": {"kind": "reverse_digits"}}}
    assert parse_config(toy).trainer.resolved_mode == "resample"
    assert (
        parse_config({"trainer": {"mode": "resample", "group_size": 3}}).trainer.resolved_mode == "resample"
    )


def test_defaults_and_derived_values(tmp_path: Path) -> None:
    cfg = parse_config({"trainer": {"group_size": 8}}, base_dir=tmp_path)
    assert cfg.trainer.fresh_per_group == 7
    assert parse_config({"trainer": {"include_logged": False}}).trainer.fresh_per_group == 8
    short = parse_config({}, base_dir=Path("/p"))
    assert ray_temp_dir(short.trainer_settings()) == Path("/p/var/ray")
    long_dir = tmp_path / ("x" * 60)
    assert str(ray_temp_dir(parse_config({}, base_dir=long_dir).trainer_settings())).startswith(
        "/tmp/sluice-ray-"
    )
