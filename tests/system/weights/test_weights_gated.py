"""Weights earn their traffic, through the whole real stack (this package's live stack: `sluice train` in
live mode with ``trainer.promotion: gated``, the policy server holding the promoted version and the
trainer's candidates at once) and the control plane's passes, on the pooled line of hooli's traffic.

* Live traffic trains v1; the trainer records its lineage and pushes it as a candidate: the server keeps
  it beside the default, and every live answer until the gates pass it comes from the promoted version.
* The gates (replay, shadow, offline) pass it and start a canary: the proxy sends the candidate arm's
  trajectories to it by name. Rewarded worse than control (the posted rewards decide here; the grader's
  reading of the arms is tested with the control plane), it is rolled back by the loop itself and
  discarded from the server; the trainer starts again from the promoted version.
* A later candidate wins its canary and is promoted: the scope's assignment serves it to every pooled
  tenant by name (the server's default stays the base).
* Every decision has its ledger entry, and ``policy_lineage`` names the trajectories each version
  trained on.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from pipeline.demo.summary import rows, wait_until
from pipeline.evolve.ledger_state import ProposalState
from pipeline.evolve.wiring import open_runner
from sinks.clients import connect_client
from sluice.evolution import SHARED_SCOPE
from tests.system.weights.conftest import POOLED, LiveStack
from tests.system.weights.traffic import Traffic, passes, policy

pytestmark = pytest.mark.slow
TENANT = POOLED["tenant"]


def test_a_trained_version_serves_only_after_the_gates_and_is_rolled_back_or_promoted(
    live_stack: LiveStack,
) -> None:
    cfg, model = live_stack.cfg, live_stack.model
    with (
        Traffic(live_stack.proxy) as traffic,
        httpx.Client(timeout=30) as http,
        open_runner(cfg.evolve_settings(), actor="test") as runner,
    ):
        first = traffic.run(TENANT, 8, prefix="warm")

        def kept() -> list[str]:
            return [v["version"] for v in policy(http, model)["kept"]]

        wait_until(lambda: "1" in kept(), 180, "the trainer's candidate v1 on the policy server")
        assert policy(http, model)["serving_version"] == "0"  # a candidate: not the default
        later = traffic.run(TENANT, 4, prefix="before-gates")  # v1 is kept, but no live request names it yet
        assert {traffic.served[t] for t in [*first, *later]} == {"0"}

        def states() -> dict[str, ProposalState]:
            """The pooled line's weights proposals (the tenants' own lines are the other test's)."""
            return {
                v: s
                for v, s in live_stack.weights_states().items()
                if s.proposal.lineage is not None and s.proposal.lineage.scope == SHARED_SCOPE
            }

        # the candidate's proposal and lineage are in the ledger before any gate looked at it
        wait_until(lambda: "1" in states(), 60, "the weights proposal of v1 in the ledger")
        lineage = states()["1"].proposal.lineage
        assert lineage is not None and lineage.parent == "0" and lineage.samples >= 4
        assert {i.trajectory_id for i in lineage.items} <= set(first)

        # replay, shadow and offline pass v1 (the newest candidate then); its canary starts
        def gated() -> list[Any]:
            return [s for s in states().values() if s.status not in ("pending", "set_aside")]

        passes(runner, gated, 240, "a candidate through replay, shadow and offline")
        first_canary = gated()[0]
        v_lose = first_canary.proposal.policy_version
        gates = [e.gate for e in first_canary.entries if e.kind == "gate"]
        assert gates[:3] == ["replay", "shadow", "offline"], [
            (e.gate, e.summary) for e in first_canary.entries
        ]
        assert first_canary.status == "canary"
        assert all(served == "0" for served in traffic.served.values())  # nothing served it before this

        # its arm is graded worse than control: the loop rolls it back and the server lets it go
        def lose() -> None:
            traffic.run(TENANT, 4, reward=lambda served: 0.0 if served == v_lose else 1.0, prefix="canary-a")

        passes(runner, lambda: states()[v_lose].status == "rolled_back", 300, f"v{v_lose} rolled back", lose)
        assert v_lose in set(traffic.served.values())  # the canary arm really was served by the candidate
        wait_until(lambda: v_lose not in kept(), 30, f"v{v_lose} discarded from the policy server")
        assert policy(http, model)["serving_version"] == "0"

        # a later candidate wins its canary: promoted, the server's default and the assignment's policy
        def promoted() -> list[str]:
            return [v for v, s in states().items() if s.status == "promoted"]

        def win() -> None:
            canary = next((s for s in states().values() if s.status == "canary"), None)
            if canary is None:  # rewards that differ (0, 1, ...): the trainer's signal for its next candidate
                traffic.run(TENANT, 4, prefix="canary-b")
                return
            v_win = canary.proposal.policy_version
            traffic.run(TENANT, 4, reward=lambda served: 1.0 if served == v_win else 0.0, prefix="canary-b")

        passes(runner, promoted, 420, "a winning candidate promoted", win)
        v_win = promoted()[0]
        assignment = runner.pub.read_assignments(15)["*/*"]
        assert assignment.active_policy == v_win and assignment.candidate_policy is None
        # served by its assignment, by name; the server's default stays the base
        wait_until(lambda: set(traffic.served[t] for t in traffic.run(TENANT, 2, prefix="after")) == {v_win},
                   60, f"v{v_win} answering the pooled tenants")  # fmt: skip
        assert policy(http, model)["serving_version"] == "0"

        # every decision has its ledger entry, in order; lineage rows name the trajectories
        s_win = states()[v_win]
        kinds = [(e.kind, e.gate or e.decision) for e in s_win.entries]
        assert kinds[0] == ("proposal", None) and ("canary", "start") in kinds and kinds[-1][0] == "promotion"
        rolled = [(e.kind, e.decision) for e in states()[v_lose].entries]
        assert rolled[-1][0] == "rollback"
        skipped = [s for s in states().values() if s.status == "set_aside"]
        assert all(e.summary.startswith("stale") for s in skipped for e in s.entries if e.decision == "skip")
    client = connect_client(cfg.sink_settings(), None)
    try:
        sql = f"SELECT DISTINCT trajectory_id FROM policy_lineage WHERE policy_version = '{v_win}'"
        wait_until(lambda: len(rows(client, sql)) >= 1, 60, f"v{v_win}'s lineage rows in DuckDB")
        names = {r["trajectory_id"] for r in rows(client, sql)}
        assert names == {i.trajectory_id for i in s_win.proposal.lineage.items}
        assert all(n.startswith(f"{TENANT}~") for n in names)
    finally:
        client.close()
