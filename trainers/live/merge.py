"""One sequence per trajectory: the model calls of a multi-step trajectory whose token ids chain become one
live sample (pure logic, no tensors).

A step *chains* onto the step before it when its prompt ids are exactly the previous step's prompt +
completion followed by new tokens (``prompt_token_prefix_len`` covers the whole previous sequence: the agent
re-sent the history and the server kept its tokens). A run of chained steps trains as one sequence: the
first step's prompt, then everything after it up to the end of the last completion. The tokens the model
generated keep their behaviour logprobs and a loss-mask weight of 1; tool results, user turns and chat
template tokens in between are attended but weigh 0 in the loss. A 20-step trajectory then reads its prefix
once instead of 20 times.

Credit: the trajectory's reward (and so its GRPO advantage) goes to every model turn of the sequence, which
is the usual recipe. Departure: a trajectory that carries a per-step reward (a ``Reward`` with
``step_index``) is not merged; its steps train as their own samples, so a step reward changes only the
turn it names. A step that does not chain (the history was edited or re-tokenized, a step in between could
not train, another temperature or learning scope) starts a new run; a run of one step is its own sample
and counts as a fallback step.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainers.live.samples import LiveSample


@dataclass
class StepPiece:
    """A trainable step as extracted: its sample, and whether its prompt extends the previous step's
    prompt + completion exactly (and that step is the previous piece)."""

    sample: LiveSample
    chains: bool


@dataclass
class MergeCounts:
    multi_step: int = 0  # trajectories with two or more trainable steps
    merged: int = 0  # of those, trained as one sequence
    fallback_steps: int = 0  # steps of multi-step trajectories that trained as their own sample
    per_step_reward: int = 0  # multi-step trajectories left unmerged because a reward names a step

    def as_dict(self) -> dict[str, int]:
        return {
            "multi_step_trajectories": self.multi_step,
            "merged_trajectories": self.merged,
            "fallback_steps": self.fallback_steps,
            "per_step_reward_trajectories": self.per_step_reward,
        }


def _joins(prev: LiveSample, piece: StepPiece) -> bool:
    s = piece.sample
    return (
        piece.chains
        and s.temperature == prev.temperature
        and s.policy_scope == prev.policy_scope
        and s.reward == prev.reward
    )


def merge_run(run: list[LiveSample]) -> LiveSample:
    """One sample for a run of chained steps: the first prompt, then the rest of the last step's sequence;
    loss mask 1 on every step's completion tokens; behaviour logprobs at those tokens (None when a step
    has none)."""
    first, last = run[0], run[-1]
    start = len(first.prompt_ids)
    full = last.prompt_ids + last.token_ids
    tokens = full[start:]
    mask = [0] * len(tokens)
    logprobs: list[float] | None = [0.0] * len(tokens)
    for s in run:
        at = len(s.prompt_ids) - start
        mask[at : at + len(s.token_ids)] = [1] * len(s.token_ids)
        if s.logprobs is None or logprobs is None:
            logprobs = None
        else:
            logprobs[at : at + len(s.token_ids)] = s.logprobs
    versions = [s.policy_version for s in run]
    return first.model_copy(
        update={
            "token_ids": tokens,
            "logprobs": logprobs,
            "loss_mask": mask,
            "merged_steps": len(run),
            "policy_version": None if None in versions else min(v for v in versions if v is not None),
            "reward_at": max((s.reward_at for s in run if s.reward_at is not None), default=None),
            "reward_sources": sorted({src for s in run for src in s.reward_sources}),
        }
    )


def merge_steps(
    pieces: list[StepPiece], per_step_reward: bool, merge: bool = True
) -> tuple[list[LiveSample], MergeCounts]:
    """The samples a trajectory trains as: chained runs merged, the rest one per step (every step on its
    own when ``merge`` is off: the per-step recipe, for comparison)."""
    counts = MergeCounts()
    samples = [p.sample for p in pieces]
    if len(pieces) < 2:
        return samples, counts
    counts.multi_step = 1
    if not merge:
        counts.fallback_steps = len(pieces)
        return samples, counts
    if per_step_reward:
        counts.per_step_reward = 1
        counts.fallback_steps = len(pieces)
        return samples, counts
    runs: list[list[LiveSample]] = []
    for p in pieces:
        if runs and _joins(runs[-1][-1], p):
            runs[-1].append(p.sample)
        else:
            runs.append([p.sample])
    out = [merge_run(r) if len(r) > 1 else r[0] for r in runs]
    counts.fallback_steps = sum(1 for r in runs if len(r) == 1)
    counts.merged = int(len(runs) == 1)
    return out, counts
