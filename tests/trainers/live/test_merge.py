"""One sequence per trajectory: chained steps merge into one sample whose loss mask covers only the tokens
the model generated; a step that does not chain, or a trajectory with a per-step reward, trains per step."""

from __future__ import annotations

import torch

from testing.live_steps import step, trajectory
from trainers.generation import sequence_logprobs
from trainers.grpo.batch import logprobs_of, pack
from trainers.live.decoupled_loss import DecoupledLossConfig, decoupled_ppo_loss
from trainers.live.extract import extract_samples
from trainers.live.learner import trained_tokens
from trainers.live.samples import LiveRow
from trainers.samples import Sample
from trainers.tiny_model import build_tiny, build_tokenizer

TOK = build_tokenizer()
GLOBS = ["sluice-tiny*"]


def chained(n_steps: int = 3, break_at: int | None = None) -> list:
    """n chained steps: prompt [1,2,3], each completion two model tokens, then two 'tool result' tokens.
    ``break_at``: that step re-sends only part of the previous sequence (its history was re-rendered)."""
    steps, full = [], [1, 2, 3]
    for i in range(n_steps):
        completion = [10 + 2 * i, 11 + 2 * i]
        if i == 0:
            steps.append(step(0, list(full), completion, logprobs=[-0.5, -0.6], task_id="task"))
        else:
            new = [40 + 2 * i, 41 + 2 * i]  # the tool's result / the next user turn
            prefix = len(full) - 1 if i == break_at else len(full)
            steps.append(
                step(
                    i,
                    full[prefix:] + new,
                    completion,
                    logprobs=[-0.5, -0.6],
                    prefix_len=prefix,
                    task_id="task",
                )
            )
            full = full + new
        full = full + completion
    return steps


def test_chained_steps_train_as_one_sequence_with_only_model_tokens_in_the_loss() -> None:
    item = extract_samples(trajectory(chained(3)), TOK, GLOBS, 100)
    (s,) = item.samples
    assert s.prompt_ids == [1, 2, 3] and s.merged_steps == 3
    assert s.token_ids == [10, 11, 42, 43, 12, 13, 44, 45, 14, 15]
    assert s.loss_mask == [1, 1, 0, 0, 1, 1, 0, 0, 1, 1]
    assert s.logprobs == [-0.5, -0.6, 0.0, 0.0, -0.5, -0.6, 0.0, 0.0, -0.5, -0.6]
    assert item.merge == {"multi_step_trajectories": 1, "merged_trajectories": 1, "fallback_steps": 0,
                          "per_step_reward_trajectories": 0}  # fmt: skip
    assert trained_tokens(LiveRow(sample=s, advantage=1.0)) == 6


def test_a_step_that_does_not_chain_falls_back_to_its_own_sample_and_is_counted() -> None:
    item = extract_samples(trajectory(chained(3, break_at=2)), TOK, GLOBS, 100)
    merged, alone = item.samples
    assert merged.merged_steps == 2 and merged.loss_mask == [1, 1, 0, 0, 1, 1]
    assert alone.merged_steps == 1 and alone.loss_mask is None and alone.step_index == 2
    assert alone.prompt_ids == [1, 2, 3, 10, 11, 42, 43, 12, 13, 44, 45]
    assert item.merge["merged_trajectories"] == 0 and item.merge["fallback_steps"] == 1


def test_a_per_step_reward_keeps_the_steps_apart_and_changes_only_the_turn_it_names() -> None:
    item = extract_samples(trajectory(chained(3), reward=0.0, step_rewards={1: 1.0}), TOK, GLOBS, 100)
    assert [(s.step_index, s.reward, s.loss_mask) for s in item.samples] == [(0, 0.0, None), (1, 1.0, None),
                                                                              (2, 0.0, None)]  # fmt: skip
    assert item.merge["per_step_reward_trajectories"] == 1 and item.merge["merged_trajectories"] == 0


def test_the_merged_row_scores_each_model_token_as_its_own_step_did_and_masks_the_rest() -> None:
    model, _ = build_tiny()
    torch.manual_seed(0)
    item = extract_samples(trajectory(chained(3)), TOK, GLOBS, 100)
    (s,) = item.samples
    batch = pack([(s.prompt_ids, Sample(token_ids=s.token_ids, logprobs=s.logprobs, reward=0.0,
                                        loss_mask=s.loss_mask), 1.0, 1.0)], TOK.pad_token_id)  # fmt: skip
    assert batch.loss_mask.tolist() == [[1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0]]
    assert batch.completion_mask.tolist() == [[1.0] * 10]  # tool tokens are attended
    assert batch.n_tokens == 6
    with torch.no_grad():
        lp = logprobs_of(model, batch)[0]
    per_step = extract_samples(trajectory(chained(3), step_rewards={0: 1.0, 1: 1.0, 2: 1.0}), TOK, GLOBS, 100)
    at = 0
    for own in per_step.samples:  # the same tokens, each step scored with its own prompt
        at = len(own.prompt_ids) - len(s.prompt_ids)
        expected = sequence_logprobs(model, own.prompt_ids, own.token_ids)
        assert torch.allclose(lp[at : at + 2], torch.tensor(expected), atol=1e-4)
    # the loss sends no gradient to a tool-result position (behaviour = proximal: no token is IcePop-masked)
    lp_var = lp.clone()[None].requires_grad_(True)
    loss, _ = decoupled_ppo_loss(lp_var, lp_var.detach(), lp_var.detach(), batch.advantages, batch.loss_mask,
                                 DecoupledLossConfig())  # fmt: skip
    loss.backward()
    grad = lp_var.grad[0]
    assert (grad[batch.loss_mask[0] == 0] == 0).all() and (grad[batch.loss_mask[0] == 1] != 0).all()
