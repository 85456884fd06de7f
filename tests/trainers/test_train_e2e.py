"""End to end on CPU: trajectories on the real broker's train topic -> async GRPO on a real local Ray ->
the tiny model learns; checkpoints resume with the version count continuing; bad input is counted, not fatal.
One Ray session for the module (ray.init ~3 s)."""

from __future__ import annotations

import json
import shutil
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import SluiceConfig
from infra.broker import LocalBroker
from pipeline.topics import create_topics
from sluice.events import DeadLetter, decode
from testing.toy_traffic import make_trajectories, produce
from tests.conftest import make_config
from tests.kafka_helpers import read_topic
from trainers.checkpoint import latest_checkpoint, read_state
from trainers.config import TaskConfig
from trainers.runner import run_training

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module", autouse=True)
def ray_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    from app.config import parse_config
    from trainers.ray_session import init_ray, ray_temp_dir

    home_token = Path.home() / ".ray" / "auth_token"
    had_token = home_token.exists()
    cfg = parse_config({}, base_dir=tmp_path_factory.mktemp("ray"))
    init_ray(cfg.trainer_settings())
    yield
    ray.shutdown()
    shutil.rmtree(ray_temp_dir(cfg.trainer_settings()), ignore_errors=True)
    assert home_token.exists() == had_token, "Ray must not write ~/.ray/auth_token"


COPY_TASK = {"kind": "reverse_digits", "min_digits": 1, "max_digits": 1, "reward": {"kind": "exact_match"}}


def trainer_config(broker: LocalBroker, tmp_path: Path, **trainer: object) -> SluiceConfig:
    base = {"task": COPY_TASK, "max_new_tokens": 4, "group_size": 8, "tasks_per_step": 16, "progress": False,
            "output_dir": str(tmp_path / "trainer"), "checkpoint_every": 1000, "idle_timeout_s": 20}  # fmt: skip
    cfg = make_config(broker, tmp_path, trainer={**base, **trainer})
    create_topics(cfg.broker, cfg.topics)
    return cfg


def test_reward_rises_on_traffic_from_the_train_topic(broker: LocalBroker, tmp_path: Path) -> None:
    steps = 80
    cfg = trainer_config(broker, tmp_path)
    good = make_trajectories(steps * 16 + 32, TaskConfig(**COPY_TASK), seed=0, logged_correct=0.5)
    alien, empty = make_trajectories(2, TaskConfig(**COPY_TASK), seed=99)
    alien.steps[0].metadata.gen_ai.request_model = "gpt-4o"
    empty.steps[0].observation.messages = []
    produce(cfg, [alien, b"\x00garbage", empty, *good])

    summary = run_training(cfg.trainer_settings(), max_steps=steps)

    assert summary.stopped == "max_steps" and summary.steps == steps
    rewards = [h["reward_mean"] for h in summary.history]
    early, late = statistics.fmean(rewards[:10]), statistics.fmean(rewards[-10:])
    assert early < 0.15 and late > 0.4 and late > early + 0.3, (early, late)
    assert summary.skipped == 2 and summary.dead_letters == 1
    dead = decode(read_topic(cfg.broker, cfg.topics.name("deadletter"), expect=1)[0][1])
    assert (
        isinstance(dead, DeadLetter) and dead.stage == "trainer-feeder" and "not a valid event" in dead.reason
    )

    ckpt = latest_checkpoint(tmp_path / "trainer")
    assert ckpt is not None and str(ckpt) == summary.checkpoint
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer_config.json",
        "vocab.json",
        "trainer_state.json",
    ):
        assert (ckpt / name).is_file(), name
    state = read_state(ckpt)
    assert state.step == steps and state.policy_version == summary.policy_version > 0
    lines = [json.loads(x) for x in (tmp_path / "trainer" / "metrics.jsonl").read_text().splitlines()]
    assert len(lines) == steps
    for key in ("reward_mean", "reward_std", "staleness_mean", "clip_frac", "masked_frac", "kl", "tokens_per_s",
                "samples_per_s", "policy_version"):  # fmt: skip
        assert key in lines[-1], key
    assert max(x["staleness_max"] for x in lines) <= cfg.trainer.max_staleness


def test_resume_continues_versions_and_reward_failures_are_recorded(
    broker: LocalBroker, tmp_path: Path
) -> None:
    # traffic task graded against hidden_state["reference"]; half the trajectories carry none, so their
    # grader raises: a recorded failure (reward 0, counted), never a dead trainer
    task = {"kind": "traffic", "reward": {"kind": "exact_match"}}
    cfg = trainer_config(broker, tmp_path, task=task, mode="resample", tasks_per_step=8, checkpoint_every=2)
    trajs = make_trajectories(64, TaskConfig(**COPY_TASK), seed=1, logged_correct=0.5)
    for i, t in enumerate(trajs):
        if i % 2 == 0:
            t.steps[0].hidden_state = {"reference": t.steps[0].observation.messages[0].content.split()[-1]}
    produce(cfg, trajs[:32])

    first = run_training(cfg.trainer_settings(), max_steps=3)
    assert first.stopped == "max_steps" and first.step == 3 and first.reward_failures > 0
    saved = read_state(latest_checkpoint(tmp_path / "trainer"))
    assert saved.step == 3 and saved.policy_version == first.policy_version

    produce(cfg, trajs[32:])
    second = run_training(cfg.trainer_settings(), resume=True, max_steps=3)
    assert second.step == 6 and second.steps == 3
    assert second.history[0]["step"] == 4
    assert second.policy_version >= saved.policy_version
    assert second.history[0]["policy_version"] >= saved.policy_version  # the count continues, never restarts
    resumed = read_state(latest_checkpoint(tmp_path / "trainer"))
    # 2 x 3 steps x 8 groups = 48 distinct trajectories trained: run two retrained nothing of run one's
    assert len(saved.taken_versions) == 24 and len(resumed.taken_versions) == 48
    assert set(saved.taken_versions) <= set(resumed.taken_versions)
    assert resumed.samples == saved.samples + sum(h["fresh_samples"] for h in second.history)
