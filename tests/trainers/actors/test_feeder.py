"""The feeder on the real broker: idempotent by (id, version), dead letters, skip reasons, resume offsets."""

from __future__ import annotations

import json

from confluent_kafka import Producer

from app.config import SluiceConfig
from governance.reward_join import on_topic, step_payloads
from sluice.events import DeadLetter, Reward, RewardEvent, Trajectory, decode, encode
from testing.toy_traffic import make_trajectories, produce, produce_by_reference
from tests.kafka_helpers import read_topic
from trainers.actors.feeder import TaskFeeder
from trainers.config import TaskConfig
from trainers.tiny_model import build_tokenizer


def version(t: Trajectory, v: int, reward: float) -> Trajectory:
    return t.model_copy(update={"version": v, "reward": reward, "event_id": f"{t.trajectory_id}:v{v}"})


def feeder(cfg: SluiceConfig, **kw: object) -> TaskFeeder:
    return TaskFeeder(cfg.trainer_settings(), build_tokenizer(), max_prompt_tokens=512, **kw)


def test_feeder_idempotent_dead_letters_and_resume(config: SluiceConfig) -> None:
    t1, t2, t3, alien, empty = make_trajectories(5, TaskConfig(kind="reverse_digits"), seed=3)
    alien.steps[0].metadata.gen_ai.request_model = "gpt-4o"
    empty.steps[0].observation.messages = []
    reward_event = RewardEvent(trajectory_id="x", tenant="acme", reward=Reward(value=1.0))
    produce(
        config,
        [t1, t2, t3, t1, version(t2, 2, 0.9), b"{not json", encode(reward_event), alien, empty],
        keys=["a", "b", "c", "a", "b", "g", "x", "d", "e"],
    )
    f = feeder(config)
    tasks, stats = f.take(10, timeout_s=10)
    assert sorted(t.key for t in tasks) == sorted(
        [f"{t1.trajectory_id}:v1", f"{t2.trajectory_id}:v2", f"{t3.trajectory_id}:v1"]
    )
    assert next(t for t in tasks if t.trajectory_id == t2.trajectory_id).logged_reward == 0.9  # latest wins
    assert stats["duplicates"] == 1 and stats["superseded"] == 1 and stats["dead_letters"] == 2
    assert stats["skipped"] == 2 and stats["skip_reasons"] == {"unknown model": 1, "no prompt": 1}

    dead = [decode(v) for _, v in read_topic(config.broker, config.topics.name("deadletter"), expect=2)]
    assert all(isinstance(d, DeadLetter) and d.stage == "trainer-feeder" for d in dead)
    assert {d.key for d in dead} == {"g", "x"} and any("expected a trajectory" in d.reason for d in dead)

    # a re-delivered taken version is skipped; a newer version of a trained trajectory is a new task
    produce(config, [t1, version(t1, 2, 0.5)], keys=["a", "a"])
    again, stats = f.take(10, timeout_s=10)
    assert [t.key for t in again] == [f"{t1.trajectory_id}:v2"] and stats["duplicates"] == 2
    offsets, taken = f.checkpoint([(t.trajectory_id, t.version, t.partition, t.offset) for t in again])
    f.close()
    assert taken[t1.trajectory_id] == 1 and taken[t2.trajectory_id] == 2  # v2 of t1 was not trained yet
    assert json.loads(json.dumps(offsets))  # goes into trainer_state.json

    resumed = feeder(config, start_offsets=offsets, taken=taken)
    redo, _ = resumed.take(10, timeout_s=5)
    resumed.close()
    assert [t.key for t in redo] == [f"{t1.trajectory_id}:v2"]  # exactly the untrained task is read again


def test_committed_offsets_are_used_without_a_checkpoint(config: SluiceConfig) -> None:
    produce(config, make_trajectories(4, TaskConfig(kind="reverse_digits"), seed=5))
    f = feeder(config)
    first, _ = f.take(4, timeout_s=10)
    f.checkpoint([])
    f.close()
    produce(config, make_trajectories(2, TaskConfig(kind="reverse_digits"), seed=6))
    g = feeder(config)
    second, _ = g.take(10, timeout_s=5)
    g.close()
    assert len(first) == 4 and len(second) == 2
    assert not {t.key for t in first} & {t.key for t in second}


def test_a_tombstone_drops_the_pending_task_and_refuses_later_versions(config: SluiceConfig) -> None:
    t1, t2 = make_trajectories(2, TaskConfig(kind="reverse_digits"), seed=7)
    produce(config, [t1, t2])
    producer = Producer(config.broker.producer_config())
    topic = config.topics.name("trajectories_train")
    producer.produce(topic, key=t1.trajectory_id, value=None)  # t1 was erased before it was trained
    assert producer.flush(10) == 0
    produce(config, [version(t1, 2, 1.0)])  # a late version (or a re-delivery) of the erased trajectory
    f = feeder(config)
    tasks, stats = f.take(10, timeout_s=10)
    f.close()
    assert [t.trajectory_id for t in tasks] == [t2.trajectory_id]
    assert stats["tombstones"] == 1 and stats["erased_pending"] == 1 and stats["erased_refused"] == 1
    assert stats.get("dead_letters", 0) == 0  # a tombstone is not an error


def test_versions_by_reference_resolve_from_the_topic_and_across_a_restart(config: SluiceConfig) -> None:
    t1, t2, t3 = make_trajectories(3, TaskConfig(kind="reverse_digits"), seed=9)
    produce_by_reference(config, [t1, t2])
    f = feeder(config)
    tasks, stats = f.take(10, timeout_s=10)
    assert sorted(t.key for t in tasks) == sorted([f"{t1.trajectory_id}:v1", f"{t2.trajectory_id}:v1"])
    assert stats["step_records"] == 2 and not stats["skip_reasons"]
    offsets, taken = f.checkpoint([])
    f.close()
    # after the restart, a late reward's version carries its header only: the steps read before the
    # resume offset are read back into the step cache, so it still trains whole
    produce_by_reference(config, [t1, version(t1, 2, 1.0)])
    resumed = feeder(config, start_offsets=offsets, taken=taken)
    again, stats = resumed.take(10, timeout_s=10)
    resumed.close()
    assert [t.key for t in again] == [f"{t1.trajectory_id}:v2"]
    assert stats["duplicates"] == 1 and not stats["skip_reasons"]


def test_a_version_whose_steps_are_not_held_is_skipped_never_partial(config: SluiceConfig) -> None:
    (t1,) = make_trajectories(1, TaskConfig(kind="reverse_digits"), seed=11)
    header = on_topic(t1, {}, step_payloads(t1, {})).header  # what the join sends after the step record
    produce(config, [header])  # read without its step record (evicted, or older than the read-back)
    f = feeder(config)
    tasks, stats = f.take(10, timeout_s=5)
    f.close()
    assert tasks == [] and stats["skip_reasons"] == {"steps_missing": 1}
