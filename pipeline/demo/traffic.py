"""Realistic agent traffic for the demo and the system tests, driven through the real ``openai`` SDK.

Each scripted trajectory is a small support agent: a user message full of PII, a forced tool call
(``lookup_customer``), a tool result whose JSON payload carries more PII and a leaked secret, a streamed
follow-up, then an end marker. Trajectories differ in tenant, identity mode (explicit header, URL prefix, or
linked by history) and reward timing (early, late = after emission, never, feedback signals only).
A few malformed requests ride along; each must get a clear 4xx.
"""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from dataclasses import dataclass, field
from typing import Literal

import httpx
import openai

from pipeline.demo.personas import PERSONAS, SECRETS
from sluice.events import scoped_trajectory_id, trajectory_owner

IdentityMode = Literal["header", "url", "linked"]
RewardPlan = Literal["early", "late", "never", "feedback"]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_customer",
            "description": "Find a customer record by free-text query.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    }
]


@dataclass
class Scenario:
    trajectory_id: str
    api_key: str
    tenant: str
    identity: IdentityMode
    reward: RewardPlan
    persona_index: int
    turns: int = 3


@dataclass
class RunReport:
    """What the driver did, for the summary and the tests."""

    scenarios: list[Scenario] = field(default_factory=list)
    calls_ok: int = 0
    calls_failed: list[str] = field(default_factory=list)
    malformed: dict[str, int] = field(default_factory=dict)  # case -> HTTP status
    rewards_posted: int = 0
    late_pending: list[Scenario] = field(default_factory=list)
    adopted: dict[str, bool] = field(default_factory=dict)  # proxy-assigned ids of linked trajectories
    identity_mismatches: list[str] = field(default_factory=list)


def plan(keys: dict[str, str], count: int, seed: int = 7) -> list[Scenario]:
    """``count`` scenarios spread over tenants (``keys``: api key -> tenant), identity modes and reward plans."""
    rng = random.Random(seed)
    items = sorted(keys.items())
    modes: list[IdentityMode] = ["header", "url", "linked"]
    rewards: list[RewardPlan] = ["early", "late", "never", "feedback"]
    out = []
    for i in range(count):
        key, tenant = items[i % len(items)]
        identity = modes[i % len(modes)]
        # History-linked trajectories learn their id from the proxy's response header: no early reward.
        reward = rewards[(i // len(modes)) % len(rewards)]
        if identity == "linked" and reward == "early":
            reward = "late"
        out.append(
            Scenario(
                trajectory_id=f"demo-{uuid.UUID(int=rng.getrandbits(128)).hex[:12]}",
                api_key=key,
                tenant=tenant,
                identity=identity,
                reward=reward,
                persona_index=i % len(PERSONAS),
                turns=3 + (i % 2),
            )
        )
    return out


class AgentDriver:
    """Runs scenarios against a proxy at ``base_url`` (the proxy root, e.g. http://127.0.0.1:8787)."""

    def __init__(self, proxy_root: str, model: str, max_tokens: int = 24, concurrency: int = 6) -> None:
        self.root = proxy_root.rstrip("/")
        self.model = model
        self.max_tokens = max_tokens
        self._sem = asyncio.Semaphore(concurrency)
        self._http = httpx.AsyncClient(timeout=60)

    def _client(self, sc: Scenario) -> openai.AsyncOpenAI:
        headers = {"x-sluice-session-id": f"session-{sc.trajectory_id}"}
        if sc.identity == "header":
            headers["x-sluice-trajectory-id"] = sc.trajectory_id
        base = f"{self.root}/t/{sc.trajectory_id}/v1" if sc.identity == "url" else f"{self.root}/v1"
        return openai.AsyncOpenAI(base_url=base, api_key=sc.api_key, default_headers=headers, max_retries=0)

    async def post_reward(self, sc: Scenario, value: float, name: str = "outcome", **extra: object) -> int:
        resp = await self._http.post(
            f"{self.root}/v1/trajectories/{sc.trajectory_id}/rewards",
            headers={"Authorization": f"Bearer {sc.api_key}"},
            json={"name": name, "value": value, "source": "demo-grader", **extra},
        )
        return resp.status_code

    async def post_feedback(self, sc: Scenario, kind: str, step: int) -> int:
        resp = await self._http.post(
            f"{self.root}/v1/trajectories/{sc.trajectory_id}/feedback",
            headers={"Authorization": f"Bearer {sc.api_key}"},
            json={"kind": kind, "step": step, "detail": "user feedback from the demo"},
        )
        return resp.status_code

    async def end(self, sc: Scenario) -> int:
        resp = await self._http.post(
            f"{self.root}/v1/trajectories/{sc.trajectory_id}/end",
            headers={"Authorization": f"Bearer {sc.api_key}"},
            json={"outcome": "resolved"},
        )
        return resp.status_code

    async def run_one(self, sc: Scenario, report: RunReport) -> None:
        p = PERSONAS[sc.persona_index]
        secret = SECRETS[sc.persona_index % len(SECRETS)]
        async with self._sem, self._client(sc) as client:
            if sc.reward == "early":
                report.rewards_posted += (await self.post_reward(sc, 1.0)) < 300
            messages: list[dict] = [
                {"role": "system", "content": "You are a support agent for Initrode. Be brief."},
                {
                    "role": "user",
                    "content": f"Hi, I'm {p.name} from {p.city}. My email is {p.email} and my phone is "
                    f"{p.phone}. Please check my last order.",
                },
            ]
            try:
                raw = await client.chat.completions.with_raw_response.create(
                    model=self.model,
                    messages=messages,
                    tools=TOOLS,
                    max_tokens=self.max_tokens,
                    tool_choice={"type": "function", "function": {"name": "lookup_customer"}},
                    temperature=0.7,
                )
                self._check_identity(sc, raw.headers.get("x-sluice-trajectory-id"), report)
                first = raw.parse()
                msg = first.choices[0].message
                call = (msg.tool_calls or [None])[0]
                messages.append(msg.model_dump(exclude_none=True))
                report.calls_ok += 1
                tool_result = {
                    "customer": {"name": p.name, "email": p.email, "card": p.card, "ssn": p.ssn},
                    "billing": {"iban": p.iban, "last_login_ip": p.ip},
                    "debug": {"upstream_token": secret},
                }
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id if call else "call_0",
                        "content": json.dumps(tool_result),
                    }
                )
                for turn in range(1, sc.turns):
                    stream = turn % 2 == 0
                    resp_text = await self._chat(sc, client, messages, stream, 1000 + turn, report)
                    report.calls_ok += 1
                    messages.append({"role": "assistant", "content": resp_text})
                    messages.append(
                        {
                            "role": "user",
                            "content": f"Thanks. Also my backup card is {p.card}; "
                            f"call me on {p.phone}. (turn {turn})",
                        }
                    )
            except openai.APIError as err:
                report.calls_failed.append(f"{sc.trajectory_id}: {err}")
                return
            if sc.reward == "feedback":
                await self.post_feedback(sc, "edit", step=1)
                await self.post_feedback(sc, "accept", step=sc.turns - 1)
            await self.end(sc)
            if sc.reward == "late":
                report.late_pending.append(sc)

    @staticmethod
    def _check_identity(sc: Scenario, seen: str | None, report: RunReport) -> None:
        """Linked trajectories adopt the proxy's id on the first call; later calls must keep it. A named
        trajectory comes back scoped by its tenant (``acme~name``): that is its id from then on."""
        if sc.identity == "linked" and not report.adopted.get(sc.trajectory_id):
            if seen:
                report.adopted[seen] = True
                sc.trajectory_id = seen
            return
        if seen and seen == scoped_trajectory_id(trajectory_owner(seen) or "", sc.trajectory_id):
            sc.trajectory_id = seen
            return
        if seen != sc.trajectory_id:
            report.identity_mismatches.append(f"{sc.trajectory_id} != {seen}")

    async def _chat(
        self,
        sc: Scenario,
        client: openai.AsyncOpenAI,
        messages: list[dict],
        stream: bool,
        seed: int,
        report: RunReport,
    ) -> str:
        if not stream:
            raw = await client.chat.completions.with_raw_response.create(
                model=self.model, messages=messages, max_tokens=self.max_tokens, temperature=0.0, seed=seed
            )
            self._check_identity(sc, raw.headers.get("x-sluice-trajectory-id"), report)
            return raw.parse().choices[0].message.content or ""
        parts = []
        s = await client.chat.completions.create(
            model=self.model,
            messages=messages,
            max_tokens=self.max_tokens,
            temperature=0.0,
            seed=seed,
            stream=True,
        )
        async for chunk in s:
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
        return "".join(parts)

    async def malformed(self, api_key: str) -> dict[str, int]:
        """Send bad requests; each must be answered 4xx with a message."""
        url = f"{self.root}/v1/chat/completions"
        auth = {"Authorization": f"Bearer {api_key}"}
        cases = {
            "invalid_json": dict(content=b"{not json", headers={**auth, "content-type": "application/json"}),
            "wrong_types": dict(json={"model": self.model, "messages": "hello"}, headers=auth),
            "unknown_model": dict(
                json={"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]}, headers=auth
            ),
            "no_api_key": dict(json={"model": self.model, "messages": [{"role": "user", "content": "x"}]}),
            "invalid_utf8": dict(
                content=b'{"model": "\xff\xfe"}', headers={**auth, "content-type": "application/json"}
            ),
        }
        out = {}
        for name, kw in cases.items():
            resp = await self._http.post(url, **kw)
            out[name] = resp.status_code
        return out

    async def run(self, scenarios: list[Scenario], report: RunReport | None = None) -> RunReport:
        """Run every scenario; ``report`` (optional) is filled as calls complete (progress displays)."""
        report = report if report is not None else RunReport()
        report.scenarios = scenarios
        await asyncio.gather(*(self.run_one(sc, report) for sc in scenarios))
        report.malformed = await self.malformed(scenarios[0].api_key)
        return report

    async def send_late_rewards(self, report: RunReport) -> None:
        for sc in report.late_pending:
            report.rewards_posted += (
                await self.post_reward(sc, 0.5, comment="late grade from a reviewer")
            ) < 300
        report.late_pending = []

    async def aclose(self) -> None:
        await self._http.aclose()
