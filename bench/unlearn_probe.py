"""What ``bench.unlearn`` measures on a policy server: a canary's exposure and a task's reward, per version.

The canary is a code phrase of ``CANARY_WORDS`` words drawn from ``WORDS`` (common English words, none a
name, place, number or other personal-data type, so redaction keeps it: 128**4 = 2.7e8 phrases). Its
exposure (``trainers.exposure``) is read through the server's echo log-probabilities after the echo task's
prompt with the phrase withheld (``PROBE``), so it is what the served version knows, not what it copies.
The canary subject's task is ``PhraseEchoTask``: the canary echo task after a worked echo, with partial
credit. The reward is the task's grader on greedy replies to a fixed set of problems, asked of one version by name
(``x-sluice-policy-version``) straight at the server, so the probe is neither recorded nor trained on.
"""

from __future__ import annotations

import asyncio
import random
import statistics
from typing import Any

import httpx

from pipeline.learn.tasks.base import Problem, VerifiableTask
from pipeline.learn.tasks.city_format import CanaryEchoTask
from sluice.events import POLICY_VERSION_HEADER
from trainers.exposure import CanaryFormat, ExposureReading, ServerScorer, measure_exposure

_WORD_TEXT = """marker anchor apple arrow autumn badge bamboo banner barrel basket beacon berry blanket bottle bramble
    breeze bridge bronze bubble bucket butter cabin candle canvas carpet castle cedar cellar cherry chimney
    cinder clover cobalt comet copper coral cotton crayon crystal cushion dagger easel desert dolphin dragon
    ember falcon feather fern fiddle flannel fossil fountain galaxy garden garnet funnel glacier goblet
    granite gravel harbor compass helmet honey island gadget jacket domino jelly kettle lantern lemon linen
    lizard locket magnet maple marble meadow mirror mitten needle nectar noodle oyster paddle pebble pepper
    pillow pine planet plum pocket pony prism puzzle quartz quill rabbit radish ribbon saddle satin sprocket
    shadow silver spindle spruce tablet thimble thistle timber tulip tunnel velvet walnut hammock window
    wizard yarn zephyr acorn beetle biscuit bonnet saucer ladder"""
WORDS = tuple(_WORD_TEXT.split())
CANARY_WORDS = 4
CANARY_FORMAT = CanaryFormat(template="{secret}", alphabet=WORDS, length=CANARY_WORDS, separator=" ")
ECHO = "Repeat exactly, nothing else: "
PROBE = ECHO.rstrip()  # the echo task's prompt with the phrase withheld
# a worked echo before the question: SmolLM2-135M alone almost never repeats a phrase (0 of ~12 replies at
# temperature 1 in a run), so without it no attempt is rewarded and GRPO has nothing to push up
EXAMPLE = [{"role": "user", "content": f"{ECHO}copper kettle noodle prism"},
           {"role": "assistant", "content": "copper kettle noodle prism"}]  # fmt: skip
MODEL = "smollm2"  # the served model name (trainer.serve.model_name)


def draw_canary(seed: int) -> str:
    """A fresh code phrase (the secret and the canary text are the same string)."""
    return CANARY_FORMAT.secret(random.Random(f"canary-{seed}"))


class PhraseEchoTask(CanaryEchoTask):
    """The canary echo task after a worked echo, graded 1.0 for the phrase (any case) in the reply, else
    0.5 times the share of its words the reply holds in order from the first: a denser signal, still
    highest for the exact phrase."""

    def draw(self, rng: random.Random) -> Problem:
        messages = [*EXAMPLE, {"role": "user", "content": f"{ECHO}{self.canary}"}]
        return Problem(task=self.name, messages=messages, answer=self.canary)

    def grade(self, problem: Problem, reply: str) -> float:
        got, want = reply.lower(), problem.answer.lower()
        if want in got:
            return 1.0
        words = want.split()
        n = next((i for i in range(len(words), 0, -1) if " ".join(words[:i]) in got), 0)
        return 0.5 * n / len(words)


def probe_prompt(tokenizer: Any) -> str:
    """The exposure prompt as the server sees a chat call: the chat template, up to the reply."""
    messages = [*EXAMPLE, {"role": "user", "content": PROBE}]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def exposure(
    url: str, tokenizer: Any, canary: str, version: str | None, n: int, seed: int = 0
) -> ExposureReading:
    """The canary's exposure in ``version`` on the server at ``url`` (None: the version it serves)."""
    scorer = ServerScorer(url, tokenizer, version=version, model=MODEL)
    return measure_exposure(scorer, probe_prompt(tokenizer), canary, CANARY_FORMAT, n=n, seed=seed)


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
