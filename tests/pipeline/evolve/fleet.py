"""Scripted tenants with planted failure modes, stored as real audited trajectories in a DuckDB file.

Each agent run is built as the proxy records it (system + user turn, an assistant tool call, the tool's
answer in the next step's observation, the final answer) and assembled by the reward join's own
``attach_tool_results``; the store is filled through the sink's write path (``DuckDBStore.write``).

Planted (tenant / task: what goes wrong):
- acme / promo: the agent does not know the promo code ("I don't know") unless it happens to have it;
  an operator's critique says what it is. A missing fact.
- acme / refund: healthy.
- globex / booking: ``book_meeting`` rejects dates written 05/01/2026; it wants 2026-05-01.
- globex / weather: the agent calls ``get_weather``, which does not exist (the tool is ``weather_lookup``);
  the failure comes back as the tool message's text, with no error flag.
- initech / arith and umbrella / arith: wrong sums under two different harnesses; both tenants' other
  task is healthy. A policy weakness.
- hooli / faq: the backend answers 503 for most calls.
- hooli / chat: two bad answers only (too little to act on).
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from governance.reward_join.tool_results import attach_tool_results
from sinks.batch import BatchTopics, PendingBatch
from sinks.flatten import SourceRecord
from sinks.store import DuckDBStore
from sluice.events import (
    Action,
    ActionResult,
    Choice,
    EligibilityDecision,
    Governance,
    Message,
    Observation,
    ReplayGrade,
    Reward,
    StepEvent,
    StepMetadata,
    ToolCall,
    Trajectory,
    encode,
    message_hash,
    utcnow,
)

BOOK_TOOL = {
    "type": "function",
    "function": {
        "name": "book_meeting",
        "description": "Book a meeting room.",
        "parameters": {
            "type": "object",
            "properties": {"date": {"type": "string", "description": "The day."}, "room": {"type": "string"}},
            "required": ["date", "room"],
        },
    },
}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "weather_lookup",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def _fp(system: str) -> str:
    return hashlib.sha256(json.dumps([system]).encode()).hexdigest()


def agent_run(
    tid: str,
    tenant: str,
    task: str,
    system: str,
    question: str,
    answer: str,
    reward: float | None,
    tool: tuple[str, dict[str, Any], str, bool] | None = None,
    tools: list[dict[str, Any]] | None = None,
    critique: str | None = None,
    feedback: str | None = None,
    error: tuple[int, str] | None = None,
    model_version: str = "policy-7",
) -> Trajectory:
    """One trajectory: optionally a tool call (name, arguments, result text, is_error) before the answer."""
    t0 = utcnow() - timedelta(hours=2)
    head = [Message(role="system", content=system), Message(role="user", content=question)]
    meta = {"task_id": task, "harness_fingerprint": _fp(system), "model_version": model_version}
    steps: list[StepEvent] = []

    def step(i: int, new: list[Message], prefix: list[Message], reply: Message, finish: str,
             result: ActionResult | None = None, tools_decl: list | None = None) -> StepEvent:  # fmt: skip
        return StepEvent(
            event_id=f"{tid}-s{i}", trajectory_id=tid, tenant=tenant, step_index=i,
            created_at=t0 + timedelta(seconds=i),
            observation=Observation(messages=new, prefix_hash=message_hash(prefix),
                                    prefix_message_count=len(prefix), tools=tools_decl),
            action=Action(choices=[Choice(message=reply, finish_reason=finish)]),
            action_result=result or ActionResult(),
            metadata=StepMetadata(started_at=t0 + timedelta(seconds=i), **meta),
            governance=Governance(redaction="redacted"),
        )  # fmt: skip

    if error is not None:
        status, text = error
        steps.append(step(0, head, [], Message(role="assistant", content=None), "error",
                          ActionResult(error=text, status_code=status), tools))  # fmt: skip
    elif tool is not None:
        name, args, result, is_error = tool
        call = Message(
            role="assistant", content=None,
            tool_calls=[ToolCall(id=f"{tid}-c0", name=name, arguments=json.dumps(args))],
        )  # fmt: skip
        steps.append(step(0, head, [], call, "tool_calls", tools_decl=tools))
        answer_msg = Message(role="tool", tool_call_id=f"{tid}-c0", content=result, is_error=is_error)
        steps.append(step(1, [answer_msg], [*head, call], Message(role="assistant", content=answer), "stop"))
    else:
        steps.append(step(0, head, [], Message(role="assistant", content=answer), "stop", tools_decl=tools))
    steps = attach_tool_results(steps)
    rewards = (
        [] if reward is None else [Reward(reward_id=f"{tid}-r", name="task", value=reward, source="grader")]
    )
    if critique or feedback:
        rewards.append(
            Reward(reward_id=f"{tid}-f", name=feedback or "critique", kind="feedback" if feedback else "critique",
                   critique=critique, source="operator")
        )  # fmt: skip
    return Trajectory(
        event_id=f"{tid}:v1", trajectory_id=tid, tenant=tenant, steps=steps, rewards=rewards, reward=reward,
        rewarded=reward is not None, first_step_at=t0, ended_at=t0 + timedelta(seconds=len(steps)),
        governance=Governance(
            redaction="redacted", eligibility=EligibilityDecision(decision="train", policy_version="p1"),
            replay=ReplayGrade(grade="deterministic"),
        ),
    )  # fmt: skip


ACME = "You are Acme's support assistant. Answer briefly."
GLOBEX = "You are Globex's office assistant. Use the tools."
INITECH = "You are Initech's helper."
UMBRELLA = "You are a calculator bot for Umbrella. Think step by step."
HOOLI = "You are Hooli's assistant."


def fleet() -> list[Trajectory]:
    out: list[Trajectory] = []
    q = "What is the current promo code?"
    for i in range(12):  # promo: 10 don't know, 2 happen to answer right
        if i < 2:
            out.append(
                agent_run(f"acme-promo-{i}", "acme", "promo", ACME, q, "The promo code is SPRING24.", 1.0)
            )
        else:
            crit = "The promo code this month is SPRING24." if i == 2 else None
            out.append(agent_run(f"acme-promo-{i}", "acme", "promo", ACME, q,
                                 "I'm sorry, I don't know the current promo code.", 0.0, critique=crit))  # fmt: skip
    for i in range(12):
        reward = 0.0 if i == 0 else 1.0
        out.append(agent_run(f"acme-refund-{i}", "acme", "refund", ACME, "How long is the refund window?",
                             "Refunds are accepted within 30 days.", reward))  # fmt: skip
    for i in range(14):  # booking: 9 calls with US dates rejected, 5 ISO dates accepted
        if i < 9:
            date = f"05/{i + 1:02d}/2026"
            tool = ("book_meeting", {"date": date, "room": "blue"},
                    f"error: invalid date '{date}': expected format YYYY-MM-DD", True)  # fmt: skip
            answer, reward = "I could not book the meeting.", 0.0
        else:
            date = f"2026-05-{i + 1:02d}"
            tool = ("book_meeting", {"date": date, "room": "blue"}, f"booked blue on {date}", False)
            answer, reward = f"Booked the blue room on {date}.", 1.0
        out.append(agent_run(f"globex-book-{i}", "globex", "booking", GLOBEX, "Book the blue room on May 1st.",
                             answer, reward, tool=tool, tools=[BOOK_TOOL]))  # fmt: skip
    for i in range(12):  # weather: 8 calls to a tool that does not exist
        if i < 8:
            # sent as plain text, as OpenAI tool messages have no error flag
            tool = ("get_weather", {"city": "Paris"}, "Error: unknown tool 'get_weather'", False)
            answer, reward = "I can't look up the weather right now.", 0.0
        else:
            tool = ("weather_lookup", {"city": "Paris"}, "Paris: 18C, sunny", False)
            answer, reward = "It is 18C and sunny in Paris.", 1.0
        out.append(agent_run(f"globex-weather-{i}", "globex", "weather", GLOBEX, "Weather in Paris?",
                             answer, reward, tool=tool, tools=[WEATHER_TOOL]))  # fmt: skip
    for tenant, system in (("initech", INITECH), ("umbrella", UMBRELLA)):
        for i in range(10):
            reward = 1.0 if i == 0 else 0.0
            out.append(agent_run(f"{tenant}-arith-{i}", tenant, "arith", system, "What is 17 + 25?",
                                 "42" if reward else "17 + 25 is 32.", reward))  # fmt: skip
        for i in range(10):
            out.append(agent_run(f"{tenant}-faq-{i}", tenant, "faq", system, "Where is the office?",
                                 "On Main Street.", 1.0))  # fmt: skip
    for i in range(10):
        if i < 7:
            out.append(agent_run(f"hooli-faq-{i}", "hooli", "faq", HOOLI, "Opening hours?", "", None,
                                 error=(503, "upstream unavailable")))  # fmt: skip
        else:
            out.append(agent_run(f"hooli-faq-{i}", "hooli", "faq", HOOLI, "Opening hours?", "9 to 5.", 1.0))
    for i in range(2):
        out.append(agent_run(f"hooli-chat-{i}", "hooli", "chat", HOOLI, "Tell me a joke.", "No.", 0.0,
                             feedback="thumbs_down"))  # fmt: skip
    return out


def fill_store(path: Path, trajectories: list[Trajectory]) -> None:
    """Write the trajectories into the DuckDB store at ``path`` through the sink's write path."""
    store = DuckDBStore(path)
    try:
        batch = PendingBatch(BatchTopics(audited="audited", deadletter="deadletter"))
        for i, t in enumerate(trajectories):
            batch.add(SourceRecord("audited", 0, i, t.trajectory_id, encode(t)))
        store.write(batch, "sluice-sink")
    finally:
        store.close()
