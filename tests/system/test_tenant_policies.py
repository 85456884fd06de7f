"""Per-tenant policies through the whole real stack: broker, tiny-model policy server, proxy, stage
workers, DuckDB sink, ``sluice train`` in live mode (``trainer.promotion: gated``, every opted-in tenant
its own learning scope, initech none) and the control plane's passes.

* Each tenant's traffic trains only its own line: the lineage of ``acme.*`` names only acme's
  trajectories, ``globex.*`` only globex's.
* Each tenant's candidate wins its canary and is promoted in its scope: the tenant's requests are then
  answered by its own version (``x-sluice-policy-version``); initech, which trains nothing, is served the
  base version.
* Rolling acme's promoted version back leaves globex's served version as it was.
* ``sluice status``, ``sluice query`` (``tenant_policies`` with a tenant's key) show the same.
"""

from __future__ import annotations

import io
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.config import SluiceConfig, load_config
from app.status import collect
from app.status_render import render
from app.up import running_stack
from pipeline.demo.summary import rows, wait_until
from pipeline.evolve.ledger_state import ProposalState, proposal_states, read_ledger
from pipeline.evolve.wiring import open_runner
from pipeline.proxy.overlay_routing import POLICY_SALT, share_point
from sinks.clients import connect_client
from sluice.events import scoped_trajectory_id
from tests.system.test_weights_gated import _config as weights_config
from tests.system.test_weights_gated import _passes, _policy

pytestmark = pytest.mark.slow
KEYS = {"acme": "sk-sluice-acme", "globex": "sk-sluice-globex", "initech": "sk-sluice-initech"}
TASK, PROMPT = "say-yes", "Say yes."


def _config(tmp: Path) -> Path:
    path = weights_config(tmp)
    data = yaml.safe_load(path.read_text())
    data["trainer"]["live"] = {
        **data["trainer"]["live"],
        "default_scope": "own",
        "scopes": {"initech": "none"},
    }
    for k in data["proxy"]["api_keys"]:  # globex opts in too: two tenants, each its own line
        k.update(consent_training=True, data_class="internal")
    data["eligibility"]["tenants"]["globex"] = {"training_opt_in": True, "retention_days": 7}
    path.write_text(yaml.safe_dump(data))
    return path


def control_id(tenant: str, prefix: str) -> str:
    """A trajectory id that falls in the control arm of any canary share up to a half."""
    while True:
        tid = f"{prefix}-{uuid.uuid4().hex[:8]}"
        ids = (tid, scoped_trajectory_id(tenant, tid))
        if all(share_point(POLICY_SALT + i) >= 0.5 for i in ids):
            return tid


class Traffic:
    """One-call trajectories per tenant through the proxy, each ended with a posted reward."""

    def __init__(self, proxy: str) -> None:
        self.proxy, self.http = proxy, httpx.Client(timeout=60)
        self.served: dict[str, str] = {}  # scoped trajectory id -> the policy version that answered

    def one(self, tenant: str, tid: str, reward: Any) -> str:
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

    def run(self, tenant: str, n: int, reward: Any = None, prefix: str = "t") -> list[str]:
        ids = []
        for i in range(n):
            tid = f"{prefix}-{uuid.uuid4().hex[:8]}"
            self.one(tenant, tid, reward if reward is not None else float(i % 2))
            ids.append(scoped_trajectory_id(tenant, tid))
        return ids


def test_each_tenant_trains_and_is_served_its_own_line_and_a_rollback_stays_in_its_scope(
    tmp_path: Path,
) -> None:
    path = _config(tmp_path)
    cfg: SluiceConfig = load_config(path)
    proxy = f"http://{cfg.proxy.host}:{cfg.proxy.port}"
    model = cfg.trainer.policy_servers[0]
    with (
        running_stack(cfg, path, with_trainer=True, log_path=tmp_path / "up.log", sink=io.StringIO()),
        httpx.Client(timeout=30) as http,
        open_runner(cfg.evolve_settings(), actor="test") as runner,
    ):
        traffic = Traffic(proxy)
        warm = {t: traffic.run(t, 8, prefix="warm") for t in ("acme", "globex")}
        traffic.run("initech", 4, prefix="warm")  # scope none: trains nothing

        def kept() -> set[str]:
            return {v["version"] for v in _policy(http, model)["kept"]}

        wait_until(lambda: {"acme.1", "globex.1"} <= kept(), 240, "acme.1 and globex.1 on the policy server")

        def states() -> dict[str, ProposalState]:
            return {
                s.proposal.policy_version: s
                for s in proposal_states(read_ledger(cfg.broker, cfg.topics, 15)).values()
                if s.proposal.surface == "weights" and s.proposal.policy_version
            }

        # each line trained on its own tenant's trajectories only; nothing trained initech's
        for version, state in states().items():
            lineage = state.proposal.lineage
            assert lineage is not None
            tenant = version.split(".")[0]
            assert tenant in ("acme", "globex"), version
            assert state.proposal.tenant == tenant and set(lineage.tenants) == {tenant}
            assert {i.trajectory_id for i in lineage.items} <= set(warm[tenant]) | {
                t for t in traffic.served if t.startswith(f"{tenant}~")
            }

        def promoted(tenant: str) -> ProposalState | None:
            return next(
                (s for v, s in states().items() if v.startswith(f"{tenant}.") and s.status == "promoted"),
                None,
            )

        def win() -> None:
            now = states()
            for tenant in ("acme", "globex"):
                canary = next(
                    (s for v, s in now.items() if v.startswith(f"{tenant}.") and s.status == "canary"), None
                )
                v_win = canary.proposal.policy_version if canary else None
                traffic.run(tenant, 3, reward=lambda served, v=v_win: 1.0 if served == v else 0.0, prefix="c")

        _passes(runner, lambda: promoted("acme") and promoted("globex"), 480, "acme and globex promoted", win)
        p_acme, p_globex = promoted("acme"), promoted("globex")
        assert p_acme is not None and p_globex is not None
        v_acme, v_globex = p_acme.proposal.policy_version, p_globex.proposal.policy_version
        assignments = runner.pub.read_assignments(15)
        assert assignments["acme/*"].active_policy == v_acme
        assert assignments["globex/*"].active_policy == v_globex
        assert _policy(http, model)["serving_version"] == "0"  # an own promotion is not everyone's default

        # each tenant is served its own promoted version; initech (no learning scope) the base
        assert traffic.one("acme", control_id("acme", "check"), 0.5) == v_acme
        assert traffic.one("globex", control_id("globex", "check"), 0.5) == v_globex
        assert traffic.one("initech", control_id("initech", "check"), 0.5) == "0"

        # rolling acme's version back leaves globex's as it is
        after = runner.rollback(p_acme.proposal.proposal_id, "operator: acme reported regressions")
        assert after.active_policy != v_acme
        acme_now = traffic.one("acme", control_id("acme", "after"), 0.5)
        assert acme_now == (after.active_policy or "0") and acme_now != v_acme
        assert traffic.one("globex", control_id("globex", "after"), 0.5) == v_globex
        assert runner.pub.read_assignments(15)["globex/*"].active_policy == v_globex

        # the store says the same: lineage per line, and each tenant's served version and rewards by version
        client = connect_client(cfg.sink_settings(), None)
        try:
            sql = "SELECT policy_version, tenant, trajectory_id FROM policy_lineage"
            wait_until(lambda: len(rows(client, sql)) > 0, 60, "lineage rows in DuckDB")
            for r in rows(client, sql):
                assert r["policy_version"].split(".")[0] == r["tenant"] and r["trajectory_id"].startswith(
                    f"{r['tenant']}~"
                )

            def served_rows() -> dict[str, Any]:
                return {r["tenant"]: r for r in rows(client, "SELECT * FROM tenant_policies")}

            want = {"acme": acme_now, "globex": v_globex}
            wait_until(
                lambda: {t: served_rows().get(t, {}).get("served_version") or "0" for t in want} == want,
                60,
                f"tenant_policies to say {want}",
            )
            got = served_rows()
            assert got["globex"]["served_by"] == "own" and got["globex"]["lineage_tenants"] == 1
            assert got["initech"]["served_by"] == "default"
            versions = {v["policy_version"] for v in got["globex"]["reward_by_version"]}
            assert {"0", v_globex} <= versions
        finally:
            client.close()
        acme_client = connect_client(cfg.sink_settings(), KEYS["acme"])
        try:
            mine = rows(acme_client, "SELECT tenant, served_version FROM tenant_policies")
            assert [r["tenant"] for r in mine] == ["acme"]
            assert {r["tenant"] for r in rows(acme_client, "SELECT tenant FROM policy_lineage")} == {"acme"}
        finally:
            acme_client.close()
        status = collect(cfg, interval_s=0)
        assert isinstance(status.tenant_policies, list)
        assert {r["tenant"]: r["served_version"] for r in status.tenant_policies}["globex"] == v_globex
        assert "tenant policies" in render(status)
