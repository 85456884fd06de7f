"""Traffic of the weights tests: one-call trajectories of a tenant's agent through the proxy, each ended
with a posted reward, and the control plane's passes run until a condition holds."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx

from pipeline.demo.summary import wait_until
from pipeline.evolve.runner import EvolveRunner
from pipeline.proxy.control.overlay_routing import POLICY_SALT, share_point
from sluice.events import scoped_trajectory_id

KEYS = {"acme": "sk-sluice-acme", "globex": "sk-sluice-globex", "initech": "sk-sluice-initech",
        "hooli": "sk-sluice-hooli"}  # fmt: skip
TASK, PROMPT = "say-yes", "Say yes."
Reward = float | Callable[[str], float]  # a value, or the value for the policy version that answered


class Traffic:
    """One-call trajectories per tenant through the proxy, each ended with a posted reward."""

    def __init__(self, proxy: str) -> None:
        self.proxy, self.http = proxy, httpx.Client(timeout=60)
        self.served: dict[str, str] = {}  # scoped trajectory id -> the policy version that answered

    def __enter__(self) -> Traffic:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()

    def one(self, tenant: str, tid: str, reward: Reward) -> str:
        """One trajectory ``tid`` of ``tenant``; returns the policy version that answered it."""
        key = KEYS[tenant]
        headers = {"authorization": f"Bearer {key}", "x-sluice-trajectory-id": tid, "x-sluice-task-id": TASK}
        body = {"model": "sluice-tiny", "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 4,
                "temperature": 1.0}  # fmt: skip
        resp = self.http.post(f"{self.proxy}/v1/chat/completions", json=body, headers=headers)
        assert resp.status_code == 200, resp.text
        served = resp.headers.get("x-sluice-policy-version", "")
        self.served[scoped_trajectory_id(tenant, tid)] = served
        auth = {"authorization": f"Bearer {key}"}
        value = reward(served) if callable(reward) else reward
        r = self.http.post(f"{self.proxy}/v1/trajectories/{tid}/rewards", headers=auth,
                           json={"name": "score", "value": value})  # fmt: skip
        assert r.status_code < 300, r.text
        r = self.http.post(f"{self.proxy}/v1/trajectories/{tid}/end", headers=auth, json={"outcome": "done"})
        assert r.status_code < 300, r.text
        return served

    def run(self, tenant: str, n: int, reward: Reward | None = None, prefix: str = "t") -> list[str]:
        """``n`` trajectories of ``tenant`` (rewards 0, 1, 0, ... unless given); returns their scoped ids."""
        ids = []
        for i in range(n):
            tid = f"{prefix}-{uuid.uuid4().hex[:8]}"
            self.one(tenant, tid, reward if reward is not None else float(i % 2))
            ids.append(scoped_trajectory_id(tenant, tid))
        return ids


def control_id(tenant: str, prefix: str) -> str:
    """A trajectory id that falls in the control arm of any canary share up to a half."""
    while True:
        tid = f"{prefix}-{uuid.uuid4().hex[:8]}"
        ids = (tid, scoped_trajectory_id(tenant, tid))
        if all(share_point(POLICY_SALT + i) >= 0.5 for i in ids):
            return tid


def policy(http: httpx.Client, model: str) -> dict[str, Any]:
    """The policy server's ``/v1/policy``: the version it serves by default and those it keeps."""
    return http.get(f"{model}/v1/policy").json()


def passes(
    runner: EvolveRunner,
    until: Callable[[], Any],
    timeout_s: float,
    what: str,
    traffic: Callable[[], None] | None = None,
) -> None:
    """Run control-plane passes (sending ``traffic()`` between them) until ``until()`` holds."""

    def step() -> bool:
        if traffic is not None:
            traffic()
        runner.run_pass()
        return bool(until())

    wait_until(step, timeout_s, what, poll_s=1.0)
