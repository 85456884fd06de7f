"""Trajectory -> live samples: recorded token ids and behaviour logprobs are used as they are; only a call
the backend gave no ids for is tokenized here, and marked so."""

from __future__ import annotations

import pytest

from testing.live_steps import step, trajectory
from trainers.live.extract import extract_samples, parse_version
from trainers.tiny_model import build_tokenizer

TOK = build_tokenizer()
GLOBS = ["sluice-tiny*"]


def test_multi_turn_prompts_are_rebuilt_from_the_recorded_token_prefix() -> None:
    s0 = step(0, [5, 6, 7], [8, 9], logprobs=[-0.1, -0.2])
    # step 1 re-sends step 0's prompt + completion (5 tokens) and adds [10, 11]
    s1 = step(1, [10, 11], [12], logprobs=[-0.3], prefix_len=5, version="1")
    # rewards naming their steps keep the steps apart (a chained trajectory otherwise trains as one sequence)
    item = extract_samples(trajectory([s0, s1], step_rewards={0: 1.0, 1: 1.0}), TOK, GLOBS, 100)
    a, b = item.samples
    assert a.prompt_ids == [5, 6, 7] and a.token_ids == [8, 9] and a.logprobs == [-0.1, -0.2]
    assert b.prompt_ids == [5, 6, 7, 8, 9, 10, 11] and b.token_ids == [12] and b.logprobs == [-0.3]
    assert (a.policy_version, b.policy_version) == (0, 1)
    assert not a.retokenized and not b.retokenized


def test_a_call_without_token_ids_is_tokenized_with_the_served_tokenizer_and_marked() -> None:
    s0 = step(0, None, None, text="42", user="what is 6*7?")
    (sample,) = extract_samples(trajectory([s0]), TOK, GLOBS, 1000).samples
    assert sample.retokenized and sample.logprobs is None
    rendered = TOK.apply_chat_template(
        [{"role": "user", "content": "what is 6*7?"}], tokenize=False, add_generation_prompt=True
    )
    assert sample.prompt_ids == TOK(rendered, add_special_tokens=False)["input_ids"]
    assert sample.token_ids == TOK("42", add_special_tokens=False)["input_ids"] + [TOK.eos_token_id]


def test_a_later_step_after_a_step_without_ids_cannot_use_the_prefix_and_is_retokenized() -> None:
    s0 = step(0, None, None)
    s1 = step(1, [10], [11], prefix_len=4)
    a, b = extract_samples(trajectory([s0, s1]), TOK, GLOBS, 1000).samples
    assert a.retokenized and b.retokenized


def test_step_rewards_win_over_the_trajectory_reward_and_unrewarded_steps_are_left_out() -> None:
    steps = [step(0, [1], [2]), step(1, [3], [4])]
    item = extract_samples(trajectory(steps, reward=0.5, step_rewards={1: 1.0}), TOK, GLOBS, 100)
    assert [s.reward for s in item.samples] == [0.5, 1.0]
    none = extract_samples(trajectory(steps, reward=None), TOK, GLOBS, 100)
    assert none.samples == [] and none.skipped_steps == {"unrewarded": 2}


def test_unknown_models_and_long_prompts_are_counted_by_reason() -> None:
    steps = [step(0, [1] * 50, [2]), step(1, [3], [4], model="gpt-4o")]
    item = extract_samples(trajectory(steps), TOK, GLOBS, 10)
    assert item.samples == [] and item.skipped_steps == {"prompt too long": 1, "unknown model": 1}


@pytest.mark.parametrize(
    ("version", "versions", "expected"),
    [
        ("3", None, ("shared", 3)),
        ("4", ["3", "4"], ("shared", 3)),
        ("acme.5", None, ("acme", 5)),
        ("acme.eu.6", ["acme.eu.6", "acme.eu.2"], ("acme.eu", 2)),
        ("tiny-1", None, None),
        (None, [], None),
        ("2", ["x"], None),
        ("acme.2", ["acme.2", "3"], None),  # versions of two scopes: no one scope's staleness applies
        (".4", None, None),
    ],
)
def test_the_policy_version_is_the_oldest_version_that_served_the_step_with_its_scope(
    version: str | None, versions: list[str] | None, expected: tuple[str, int] | None
) -> None:
    s = step(0, [1], [2], version=version, versions=versions)
    assert parse_version(s) == expected


def test_groups_by_task_id_else_by_prompt_and_baselines_by_task_else_harness() -> None:
    with_task = extract_samples(trajectory([step(0, [1, 2], [3], task_id="q7")]), TOK, GLOBS, 100).samples[0]
    assert with_task.group_key == "task:q7" and with_task.baseline_key == "task:q7"
    a = extract_samples(trajectory([step(0, [1, 2, 3], [3])]), TOK, GLOBS, 100).samples[0]
    b = extract_samples(trajectory([step(0, [1, 2, 4], [3])]), TOK, GLOBS, 100).samples[0]
    assert a.group_key != b.group_key and a.baseline_key == b.baseline_key
    a2 = extract_samples(trajectory([step(0, [1, 2, 3], [3])]), TOK, GLOBS, 100, prefix_tokens=2).samples[0]
    b2 = extract_samples(trajectory([step(0, [1, 2, 4], [3])]), TOK, GLOBS, 100, prefix_tokens=2).samples[0]
    assert a2.group_key == b2.group_key


def test_greedy_and_unset_temperatures_score_at_one() -> None:
    for t in (0.0, None):
        s = extract_samples(trajectory([step(0, [1], [2], temperature=t)]), TOK, GLOBS, 100).samples[0]
        assert s.temperature == 1.0
    s = extract_samples(trajectory([step(0, [1], [2], temperature=0.7)]), TOK, GLOBS, 100).samples[0]
    assert s.temperature == 0.7
