"""Tool-call format: answer a request with one JSON object naming the tool and its argument.

The checker parses the first JSON object in the reply and accepts it when it has exactly the expected tool
name and argument; prose around it is ignored, a malformed or wrong object scores 0.
"""

from __future__ import annotations

import json
import random
import re

from pipeline.learn.tasks.base import Problem, VerifiableTask
from pipeline.learn.tasks.extraction import CITIES


def first_json_object(text: str) -> dict | None:
    """The first balanced ``{...}`` in ``text`` that parses as a JSON object."""
    start = text.find("{")
    while start != -1:
        depth = 0
        for i in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                try:
                    value = json.loads(text[start : i + 1])
                except ValueError:
                    break
                return value if isinstance(value, dict) else None
        start = text.find("{", start + 1)
    return None


_ASK = re.compile(r"What is the weather in ([A-Za-z]+)\? Call the tool")


class ToolCallTask(VerifiableTask):
    name = "tool_call"
    max_tokens = 16

    def draw(self, rng: random.Random) -> Problem:
        city = rng.choice(CITIES)
        prompt = (
            f"What is the weather in {city}? Call the tool by replying with JSON only, like "
            '{"tool": "weather", "city": "Paris"}'
        )
        answer = json.dumps({"tool": "weather", "city": city})
        return Problem(task=self.name, messages=[{"role": "user", "content": prompt}], answer=answer)

    def answer_from(self, messages: list[dict[str, str]]) -> str | None:
        """The tool call the last user message asks for."""
        user = [m for m in messages if m.get("role") == "user"]
        found = _ASK.match(user[-1].get("content") or "") if user else None
        return json.dumps({"tool": "weather", "city": found.group(1)}) if found else None

    def grade(self, problem: Problem, reply: str) -> float:
        return 1.0 if first_json_object(reply) == json.loads(problem.answer) else 0.0
