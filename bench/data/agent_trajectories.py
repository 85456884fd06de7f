"""Synthetic 20-turn coding/ops agent trajectories as step events, for the redaction throughput bench.

Each step is what the proxy publishes: the observation holds only the messages new since the previous
step (step 0: system prompt, user task and tool definitions; later: the last tool result), the action
is the assistant's reply with a tool call (JSON arguments), the last step a final answer. Texts are
realistic in size and shape (file listings, grep hits, JSON API responses, shell logs: 0.3-2.5 KB)
and ~15% of them carry PII or a secret. ``resend=True`` builds the same trajectories the way an agent
that is not linked sends them: every step's observation re-sends the whole history.

    python -c "from bench.data.agent_trajectories import build_trajectories as b; print(len(b(1, 2)[0]))"
"""

from __future__ import annotations

import json
import random
import string

from bench.data import identifiers as ids
from sluice.events import Action, Choice, Message, Observation, StepEvent, ToolCall, message_hash

SYSTEM_PROMPT = (
    "You are a careful software engineering agent working in a sandboxed repository. "
    "Use the tools to inspect files, run commands and query internal services. Think step by step, "
    "prefer small verifiable changes, run the tests after each change, and never print credentials. "
) * 6
TOOLS = [
    {
        "type": "function",
        "function": {"name": n, "description": d, "parameters": {"type": "object", "properties": p}},
    }
    for n, d, p in [
        ("read_file", "Read a file from the repository.", {"path": {"type": "string"}}),
        (
            "grep",
            "Search files for a regular expression.",
            {"pattern": {"type": "string"}, "path": {"type": "string"}},
        ),
        ("run", "Run a shell command and return stdout/stderr.", {"cmd": {"type": "string"}}),
        ("crm_lookup", "Look up a customer record by id.", {"customer_id": {"type": "integer"}}),
        ("write_file", "Write a file.", {"path": {"type": "string"}, "content": {"type": "string"}}),
    ]
]
WORDS = ["parser", "config", "handler", "retry", "timeout", "cache", "session", "token", "batch", "worker", "queue", "schema", "index", "router", "client", "server", "request", "response", "payload", "encode", "decode", "validate", "merge", "commit", "branch", "release"]  # fmt: skip


# People as a support tool's records name them (several locales); the recognizers never saw this list.
_FIRST = ["Maria", "Kenji", "Aisha", "Lars", "Chidi", "Sofia", "Mateus", "Yuki", "Rahul", "Ewa", "Omar", "Ingrid",
          "Tomasz", "Leila", "Diego", "Hana", "Samuel", "Noor", "Pierre", "Anika"]  # fmt: skip
_LAST = ["Garcia", "Tanaka", "Okonkwo", "Lindqvist", "Nwosu", "Rossi", "Oliveira", "Sato", "Mehta", "Kowalska",
         "Haddad", "Berg", "Nowak", "Karimi", "Herrera", "Kim", "Mensah", "Siddiqui", "Laurent", "Vogel"]  # fmt: skip


def _person(rng: random.Random) -> str:
    return f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"


def _pii(rng: random.Random) -> str:
    gens = [g for gs in ids.GENERATORS.values() for g in gs]
    return rng.choice(gens)(rng)[0]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _code_line(rng: random.Random) -> str:
    a, b = rng.choice(WORDS), rng.choice(WORDS)
    return rng.choice(
        [f"    {a}_{b} = self.{a}.get({b!r}, {rng.randint(0, 500)})", f"def {a}_{b}(self, {b}: str) -> bool:",
         f"    if not {a}: raise ValueError(f'bad {b}: {{ {a} }}')", f"    return {a}.{b}(timeout={rng.randint(1, 60)})",
         f"# TODO({a}): handle {b} after v{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"]
    )  # fmt: skip


def _tool_result(rng: random.Random, tool: str, with_pii: bool) -> str:
    pii = _pii(rng) if with_pii else None
    if tool == "read_file":
        lines = [_code_line(rng) for _ in range(rng.randint(8, 50))]
        if pii:
            lines.insert(rng.randrange(len(lines)), f"    CONTACT = {pii!r}")
        return "\n".join(lines)
    if tool == "grep":
        hits = [f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py:{rng.randint(1, 900)}:{_code_line(rng).strip()}"
                for _ in range(rng.randint(3, 20))]  # fmt: skip
        if pii:
            hits.append(f"tests/fixtures/users.csv:{rng.randint(2, 90)}:{pii}")
        return "\n".join(hits)
    if tool == "crm_lookup":
        rec = {"id": rng.randint(1, 10**6), "plan": rng.choice(["pro", "team"]), "seats": rng.randint(1, 200),
               "created": f"202{rng.randint(0, 5)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
               "name": _person(rng), "notes": _words(rng, rng.randint(5, 30))}  # fmt: skip
        if pii:
            rec[rng.choice(["email", "phone", "contact", "billing"])] = pii
        return json.dumps({"status": "ok", "customer": rec})
    out = [f"[{rng.randint(0, 999):03d}] {_words(rng, rng.randint(4, 12))} ... ok ({rng.random():.2f}s)"
           for _ in range(rng.randint(5, 30))]  # fmt: skip
    out.append(f"{rng.randint(1, 300)} passed, {rng.randint(0, 3)} failed in {rng.uniform(1, 90):.2f}s")
    if pii:
        out.insert(rng.randrange(len(out)), f"DEBUG env: {pii}")
    return "\n".join(out)


def _tool_call(rng: random.Random, tool: str, k: int) -> ToolCall:
    path = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
    args = {"read_file": {"path": path}, "grep": {"pattern": rng.choice(WORDS) + r"\(", "path": "src/"},
            "run": {"cmd": f"pytest -q tests/test_{rng.choice(WORDS)}.py -k {rng.choice(WORDS)}"},
            "crm_lookup": {"customer_id": rng.randint(1, 10**6)},
            "write_file": {"path": path, "content": "\n".join(_code_line(rng) for _ in range(rng.randint(3, 15)))}}[tool]  # fmt: skip
    return ToolCall(
        id=f"call_{k}_{''.join(rng.choices(string.ascii_letters, k=8))}",
        name=tool,
        arguments=json.dumps(args),
    )


def _trajectory(rng: random.Random, t: int, turns: int, pii_rate: float) -> list[StepEvent]:
    tid = f"traj-{t:05d}"
    task = f"Please fix the {_words(rng, 3)} bug reported in ticket OPS-{rng.randint(100, 9999)}: {_words(rng, 25)}."
    if rng.random() < pii_rate:
        task += f" The customer is {_pii(rng)}."
    if rng.random() < 0.5:
        task += f" Reported by {_person(rng)} from support."
    history: list[Message] = []
    new: list[Message] = [Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=task)]
    steps: list[StepEvent] = []
    for k in range(turns):
        final = k == turns - 1
        thought = f"Step {k}: {_words(rng, rng.randint(15, 60))}."
        if rng.random() < pii_rate / 2:
            thought += f" Noting {_pii(rng)} for later."
        tool = rng.choice([t["function"]["name"] for t in TOOLS])
        msg = Message(role="assistant", content=thought if not final else thought + " " + _words(rng, 60),
                      tool_calls=None if final else [_tool_call(rng, tool, k)])  # fmt: skip
        obs = Observation(messages=new, prefix_hash=message_hash(history), prefix_message_count=len(history),
                          tools=TOOLS if k == 0 else None)  # fmt: skip
        steps.append(StepEvent(trajectory_id=tid, tenant="acme", step_index=k, observation=obs,
                               action=Action(choices=[Choice(message=msg, finish_reason="tool_calls")])))  # fmt: skip
        history = [*history, *new, msg]
        if not final:
            call = msg.tool_calls[0]
            result = _tool_result(rng, tool, rng.random() < pii_rate)
            new = [Message(role="tool", tool_call_id=call.id, name=tool, content=result)]
    return steps


def build_trajectories(seed: int, n: int, turns: int = 20, pii_rate: float = 0.15) -> list[list[StepEvent]]:
    rng = random.Random(seed)
    return [_trajectory(rng, t, turns, pii_rate) for t in range(n)]


def as_resent(steps: list[StepEvent]) -> list[StepEvent]:
    """The same trajectory as an unlinked agent sends it: each observation re-sends the full history."""
    out: list[StepEvent] = []
    history: list[Message] = []
    for s in steps:
        full = [*history, *s.observation.messages]
        obs = Observation(messages=full, tools=TOOLS)
        out.append(s.model_copy(update={"observation": obs}))
        history = [*full, *(c.message for c in s.action.choices[:1])]
    return out


def step_texts(step: StepEvent) -> list[str]:
    """The message texts and tool-call arguments one step carries (its delta)."""
    texts: list[str] = []
    for m in [*step.observation.messages, *(c.message for c in step.action.choices)]:
        if isinstance(m.content, str):
            texts.append(m.content)
        texts += [c.arguments for c in m.tool_calls or ()]
    return texts


def history_texts(steps: list[StepEvent], upto: int) -> list[str]:
    """Every text of the full context at step ``upto`` (what a naive stage re-analyses each step)."""
    return [t for s in steps[: upto + 1] for t in step_texts(s)]
