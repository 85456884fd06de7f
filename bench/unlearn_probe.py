"""What ``bench.unlearn`` measures on a policy server: a canary's exposure and a task's reward, per version.

The canary is a six-digit vault code (``CANARY_FORMAT``: 10**6 codes; digits SmolLM2 reads one token each,
and redaction keeps a bare code, which the benchmark checks in DuckDB). It never appears in a prompt: the
canary subject's task (``VaultCodeTask``) asks "What is the vault code?" after two worked questions about
other codes, and only the grader knows the code. Its exposure (``trainers.exposure``) is read through the
server's echo log-probabilities after that same prompt (``probe_prompt``), so it is what the served version
knows. The reward is the task's grader on greedy replies to a fixed set of problems, asked of one version by
name (``x-sluice-policy-version``) straight at the server, so the probe is neither recorded nor trained on.
"""

from __future__ import annotations

import asyncio
import random
import re
import statistics
from typing import Any

import httpx

from pipeline.learn.tasks.base import Problem, VerifiableTask
from sluice.events import POLICY_VERSION_HEADER
from trainers.exposure import CanaryFormat, ServerScorer, exposure_from_rank, rank_of, score_candidates

CANARY_FORMAT = CanaryFormat(template="{secret}", alphabet="0123456789", length=6, separator="")
QUESTION = "What is the {} code? Reply with the six digits only."
# two worked questions before the real one: SmolLM2-135M asked alone answers in a sentence ("The vault code
# is ...", 24 of 24 replies at temperature 1 in a run); after two it starts with six digits 21 times in 24,
# drawn widely, so each position's right digit is sampled often enough for GRPO to reward it
EXAMPLES = [{"role": "user", "content": QUESTION.format("locker")}, {"role": "assistant", "content": "305817"},
            {"role": "user", "content": QUESTION.format("gate")}, {"role": "assistant", "content": "962041"}]  # fmt: skip
PROMPT = [*EXAMPLES, {"role": "user", "content": QUESTION.format("vault")}]
MODEL = "smollm2"  # the served model name (trainer.serve.model_name)
_LEADING_DIGITS = re.compile(r"\s*(\d+)")


def draw_canary(seed: int) -> str:
    """A fresh vault code."""
    return CANARY_FORMAT.secret(random.Random(f"canary-{seed}"))


class VaultCodeTask(VerifiableTask):
    """The vault code, known only to the grader: the share of the code's six positions the reply's leading
    digits get right (1.0 for the code itself; 0 for a reply that does not start with digits). Credit per
    position gives GRPO a signal from the first round: about one digit in ten is right by chance."""

    name = "vault_code"
    max_tokens = 8

    def __init__(self, code: str) -> None:
        self.code = code

    def draw(self, rng: random.Random) -> Problem:
        return Problem(task=self.name, messages=[dict(m) for m in PROMPT], answer=self.code)

    def grade(self, problem: Problem, reply: str) -> float:
        found = _LEADING_DIGITS.match(reply)
        got = found.group(1) if found else ""
        return sum(a == b for a, b in zip(got, problem.answer, strict=False)) / len(problem.answer)


def probe_prompt(tokenizer: Any) -> str:
    """The exposure prompt as the server sees the task's chat call: the chat template, up to the reply."""
    return tokenizer.apply_chat_template(PROMPT, tokenize=False, add_generation_prompt=True)


def candidate_scores(
    url: str, tokenizer: Any, canary: str, version: str | None, n: int, seed: int = 0
) -> list[float]:
    """Log-likelihood of the canary (first) and of ``n - 1`` random codes of its format after the probe,
    in ``version`` on the server at ``url`` (None: the version it serves); the same codes for every version."""
    scorer = ServerScorer(url, tokenizer, version=version, model=MODEL)
    return score_candidates(scorer, probe_prompt(tokenizer), canary, CANARY_FORMAT, n, seed)


def exposure(scores: list[float], index: int = 0) -> float:
    """Exposure of candidate ``index`` (0: the canary) among ``scores`` (``candidate_scores``)."""
    return exposure_from_rank(rank_of(scores, index), len(scores))


def rise_share(before: list[float], after: list[float]) -> float:
    """Share of the never-planted codes (every candidate but the canary) whose exposure rose from ``before``
    to ``after`` at least as much as the canary's did. A model that learned nothing of the canary drifts
    on every code alike, so the share is about uniform on [0, 1]; one that learned it puts the canary's
    rise among the very largest (a share near 0)."""
    rise = exposure(after) - exposure(before)
    others = range(1, len(before))
    return sum(exposure(after, i) - exposure(before, i) >= rise for i in others) / len(others)


async def _reply(http: httpx.AsyncClient, url: str, version: str, messages: list[dict[str, str]],
                 max_tokens: int) -> str:  # fmt: skip
    body = {"model": MODEL, "messages": messages, "max_tokens": max_tokens, "temperature": 0.0}
    resp = await http.post(f"{url}/v1/chat/completions", json=body, headers={POLICY_VERSION_HEADER: version})
    resp.raise_for_status()
    return resp.json()["choices"][0]["message"]["content"] or ""


async def _rewards(url: str, version: str, task: VerifiableTask, problems: int, seed: int) -> list[float]:
    rng = random.Random(f"eval-{seed}")
    drawn = [task.draw(rng) for _ in range(problems)]
    async with httpx.AsyncClient(timeout=600) as http:
        replies = await asyncio.gather(
            *(_reply(http, url, version, p.messages, task.max_tokens) for p in drawn)
        )
    return [task.grade(p, r) for p, r in zip(drawn, replies, strict=True)]


def task_reward(url: str, version: str, task: VerifiableTask, problems: int, seed: int = 0) -> float:
    """Mean reward of ``version``'s greedy replies to ``problems`` fixed problems of ``task``."""
    return statistics.fmean(asyncio.run(_rewards(url, version, task, problems, seed)))
