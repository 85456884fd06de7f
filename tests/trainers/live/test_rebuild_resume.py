"""A rebuild survives its trainer: the live driver on a real local Ray with the tiny-model learner as its
actor trains a line of three published versions, an erasure reaches the second, and the learner's
process dies at the first replayed update. A fresh driver and learner on the same output dir (whose
learner starts from the base weights, as after a restart from an older checkpoint) resume the plan left
on disk, publish the rebuilt version with ``rebuild_of`` and remove the plan; its weights are those of
the same rebuild run without the interruption.

No policy server listens at the configured address: pushes fail, and the learner keeps its copies of
each version's weights as it does after any push. One Ray session for the module (ray.init ~3 s)."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from infra.broker import free_port
from sluice.evolution import SHARED_SCOPE
from sluice.rebuild_files import rebuild_root
from tests.trainers.live.test_learner import rows
from trainers.checkpoint import TrainerState
from trainers.config import TrainerConfig
from trainers.live.learner import LiveLearner
from trainers.live.loop import LiveLoop
from trainers.live.rebuild_plan import read_plans, read_weights
from trainers.live.samples import LiveRow
from trainers.loop_core import RunSetup, StopFlag
from trainers.metrics import MetricsLog

ray = pytest.importorskip("ray")
ERASED = "subject-gone"


@pytest.fixture(scope="module", autouse=True)
def ray_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    from app.config import parse_config
    from trainers.ray_session import init_ray, ray_temp_dir

    cfg = parse_config({}, base_dir=tmp_path_factory.mktemp("ray"))
    init_ray(cfg.trainer_settings())
    yield
    ray.shutdown()
    shutil.rmtree(ray_temp_dir(cfg.trainer_settings()), ignore_errors=True)


class DiesOnReplay(LiveLearner):
    """The live learner, whose process dies (no cleanup, like a power cut) at the first replayed update."""

    def train(
        self, rows: list[LiveRow], scope_name: str = SHARED_SCOPE, replay: bool = False
    ) -> dict[str, Any]:
        if replay:
            os._exit(1)
        return super().train(rows, scope_name, replay)


def _config() -> TrainerConfig:
    return TrainerConfig(
        learning_rate=3e-3, promotion="direct", policy_servers=[f"http://127.0.0.1:{free_port()}"],
        # updates of at least 4 rows: the two the erasure shrank (6 and 8 rows) replay as two updates
        live={"push_weights": True, "default_scope": "shared", "update_samples": 4},
    )  # fmt: skip


def _batches() -> list[list[LiveRow]]:
    """Three updates' rows, the second with two rows of the erased trajectory."""
    base = rows()

    def named(batch: int) -> list[LiveRow]:
        tids = [ERASED if batch == 1 and i < 2 else f"kept-{batch}-{i}" for i in range(len(base))]
        return [
            r.model_copy(update={"sample": r.sample.model_copy(update={"trajectory_id": tid})})
            for r, tid in zip(base, tids, strict=True)
        ]

    return [named(b) for b in range(3)]


def _driver(out: Path, learner_cls: type[LiveLearner]) -> tuple[LiveLoop, Any]:
    tcfg = _config()
    learner = ray.remote(num_cpus=1)(learner_cls).remote(tcfg, "sluice-tiny", str(out))
    run = RunSetup(
        state=TrainerState(), source="sluice-tiny", resume_from=None, tokenizer=None, max_positions=0,
        max_steps=None, output_dir=out, topic="train", stop=StopFlag(), metrics=MetricsLog(out / "metrics.jsonl"),
    )  # fmt: skip
    loop = LiveLoop(tcfg, run, feeder=None, learner=learner)  # no feeder: the rows are handed in below
    loop._begin()
    return loop, learner


def _train_line(loop: LiveLoop, batches: list[list[LiveRow]]) -> None:
    """Each batch trained and published as the driver's update does (train, lineage, push)."""
    for batch in batches:
        lm = ray.get(loop.learner.train.remote(batch, SHARED_SCOPE))
        loop.unpublished.trained(SHARED_SCOPE, batch)
        loop._publish(batch, lm, SHARED_SCOPE)
    assert loop.published[SHARED_SCOPE].versions() == ["1", "2", "3"]


def test_a_restart_resumes_an_unfinished_rebuild_and_publishes_it(tmp_path: Path) -> None:
    batches = _batches()

    # the same rebuild, uninterrupted
    whole, learner = _driver(tmp_path / "whole", LiveLearner)
    _train_line(whole, batches)
    done = whole._rebuild(SHARED_SCOPE, {ERASED}, time.monotonic())
    assert done is not None and done["rebuild_of"] == ["2", "3"] and done["rebuilt_from"] == "1"
    assert (
        done["rebuilt_version"] == "5" and done["rebuild_rows_erased"] == 2 and "rebuild_resumed" not in done
    )
    expected = ray.get(learner.scope_weights.remote(SHARED_SCOPE))
    assert read_plans(rebuild_root(tmp_path / "whole")) == []
    ray.kill(learner)

    # interrupted: the learner dies at the first replayed update; the plan is on disk
    out = tmp_path / "trainer"
    loop, dying = _driver(out, DiesOnReplay)
    _train_line(loop, batches)
    with pytest.raises(ray.exceptions.RayActorError):
        loop._rebuild(SHARED_SCOPE, {ERASED}, time.monotonic())
    [plan] = read_plans(rebuild_root(out))
    assert plan.scope == SHARED_SCOPE and plan.rebuilt_from == "1" and plan.rebuild_of == ["2", "3"]
    assert plan.version == 3 and plan.rows_erased == 2
    replayed = [r.sample.trajectory_id for b in plan.batches for r in b]
    assert len(replayed) == 14 and ERASED not in replayed
    start = read_weights(rebuild_root(out), SHARED_SCOPE)  # version 1's, as the learner held them
    loop.metrics.close()

    # a restart: a fresh learner at the base weights and a fresh driver on the same output dir
    again, learner = _driver(out, LiveLearner)
    [m] = again.history
    assert m["rebuild_resumed"] is True and m["rebuild_of"] == ["2", "3"] and m["rebuilt_from"] == "1"
    assert m["rebuilt_version"] == "5" and m["rebuilt_samples"] == 14 and m["rebuild_rows_erased"] == 2
    assert again.published[SHARED_SCOPE].versions() == ["5"]
    assert again.published[SHARED_SCOPE].first_hit({ERASED}) is None
    assert not (out / "rebuild").exists() or not any((out / "rebuild").iterdir())
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert lines[-1]["rebuild_resumed"] is True and lines[-1]["rebuilt_version"] == "5"
    resumed = ray.get(learner.scope_weights.remote(SHARED_SCOPE))
    assert resumed.keys() == expected.keys()
    assert all(torch.equal(resumed[n], expected[n]) for n in expected)
    assert any(not torch.equal(resumed[n], start[n]) for n in start)  # the replay moved it from version 1
    ray.kill(learner)
    again.metrics.close()
    whole.metrics.close()
