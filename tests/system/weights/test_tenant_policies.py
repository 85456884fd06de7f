"""Per-tenant policies through the whole real stack (this package's live stack: ``trainer.promotion:
gated``, every opted-in tenant its own learning scope, initech none) and the control plane's passes.

* Each tenant's traffic trains only its own line: the lineage of ``acme.*`` names only acme's
  trajectories, ``globex.*`` only globex's.
* Each tenant's candidate wins its canary and is promoted in its scope: the tenant's requests are then
  answered by its own version (``x-sluice-policy-version``); initech, which trains nothing, is served the
  base version.
* Rolling acme's promoted version back leaves globex's served version as it was.
* ``sluice status``, ``sluice query`` (``tenant_policies`` with a tenant's key) show the same.
"""

from __future__ import annotations

import httpx
import pytest

from app.status import collect
from app.status_render import render
from pipeline.demo.summary import rows, wait_until
from pipeline.evolve.ledger_state import ProposalState
from pipeline.evolve.wiring import open_runner
from sinks.clients import connect_client
from sluice.evolution import SHARED_SCOPE
from tests.system.weights.conftest import POOLED, LiveStack
from tests.system.weights.traffic import KEYS, Traffic, control_id, passes, policy

pytestmark = pytest.mark.slow


def test_each_tenant_trains_and_is_served_its_own_line_and_a_rollback_stays_in_its_scope(
    live_stack: LiveStack,
) -> None:
    cfg, model = live_stack.cfg, live_stack.model
    with (
        Traffic(live_stack.proxy) as traffic,
        httpx.Client(timeout=30) as http,
        open_runner(cfg.evolve_settings(), actor="test") as runner,
    ):
        warm = {t: traffic.run(t, 8, prefix="warm") for t in ("acme", "globex")}
        traffic.run("initech", 4, prefix="warm")  # scope none: trains nothing

        def kept() -> set[str]:
            return {v["version"] for v in policy(http, model)["kept"]}

        wait_until(lambda: {"acme.1", "globex.1"} <= kept(), 240, "acme.1 and globex.1 on the policy server")

        # each line trained on its own tenant's trajectories only; nothing trained initech's (the pooled
        # line, where the weights-gated test has run, trained on its own tenant's only)
        for version, state in live_stack.weights_states().items():
            lineage = state.proposal.lineage
            assert lineage is not None
            if lineage.scope == SHARED_SCOPE:
                assert set(lineage.tenants) == {POOLED["tenant"]}, version
                continue
            tenant = version.split(".")[0]
            assert tenant in ("acme", "globex"), version
            assert state.proposal.tenant == tenant and set(lineage.tenants) == {tenant}
            assert {i.trajectory_id for i in lineage.items} <= set(warm[tenant]) | {
                t for t in traffic.served if t.startswith(f"{tenant}~")
            }

        def promoted(tenant: str) -> ProposalState | None:
            return next(
                (
                    s
                    for v, s in live_stack.weights_states().items()
                    if v.startswith(f"{tenant}.") and s.status == "promoted"
                ),
                None,
            )

        def win() -> None:
            now = live_stack.weights_states()
            for tenant in ("acme", "globex"):
                canary = next(
                    (s for v, s in now.items() if v.startswith(f"{tenant}.") and s.status == "canary"), None
                )
                v_win = canary.proposal.policy_version if canary else None
                traffic.run(tenant, 3, reward=lambda served, v=v_win: 1.0 if served == v else 0.0, prefix="c")

        passes(runner, lambda: promoted("acme") and promoted("globex"), 480, "acme and globex promoted", win)
        p_acme, p_globex = promoted("acme"), promoted("globex")
        assert p_acme is not None and p_globex is not None
        v_acme, v_globex = p_acme.proposal.policy_version, p_globex.proposal.policy_version
        assignments = runner.pub.read_assignments(15)
        assert assignments["acme/*"].active_policy == v_acme
        assert assignments["globex/*"].active_policy == v_globex
        assert policy(http, model)["serving_version"] == "0"  # an own promotion is not everyone's default

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
            if r["tenant"] == POOLED["tenant"]:  # the pooled line: no tenant's own name in its versions
                assert "." not in r["policy_version"] and r["trajectory_id"].startswith(f"{r['tenant']}~")
                continue
            assert r["policy_version"].split(".")[0] == r["tenant"] and r["trajectory_id"].startswith(
                f"{r['tenant']}~"
            )

        def served_rows() -> dict[str, dict]:
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
