"""Which overlay and arm a request gets: scope precedence, sticky arms, the canary share honoured."""

from __future__ import annotations

import uuid

from pipeline.proxy.control.overlay_listener import OverlayListener
from pipeline.proxy.control.overlay_routing import choose_overlay, share_point
from sluice.broker_config import BrokerConfig
from sluice.evolution import MemoryEntry, Overlay, OverlayAssignment


def ov(name: str, tenant: str = "acme", task: str | None = None) -> Overlay:
    return Overlay(overlay_id=name, tenant=tenant, task_id=task, memory=[MemoryEntry(text=name)])


def table(*assignments: OverlayAssignment) -> dict[str, OverlayAssignment]:
    return {a.key: a for a in assignments}


def test_task_scope_first_then_tenant_then_none() -> None:
    both = table(
        OverlayAssignment(tenant="acme", active=ov("tenant-wide")),
        OverlayAssignment(tenant="acme", task_id="refunds", active=ov("refunds-only", task="refunds")),
    )
    assert choose_overlay(both, "acme", "refunds", "acme~t1").overlay_id == "refunds-only"
    assert choose_overlay(both, "acme", "billing", "acme~t1").overlay_id == "tenant-wide"
    assert choose_overlay(both, "acme", None, "acme~t1").overlay_id == "tenant-wide"
    assert choose_overlay(both, "globex", "refunds", "globex~t1") is None
    task_only = table(OverlayAssignment(tenant="acme", task_id="refunds", active=ov("r", task="refunds")))
    assert choose_overlay(task_only, "acme", None, "acme~t1") is None


def test_control_of_a_bare_agent_records_the_arm_without_an_overlay() -> None:
    canary = table(OverlayAssignment(tenant="acme", active=None, candidate=ov("cand"), canary_share=0.0))
    choice = choose_overlay(canary, "acme", None, "acme~t1")
    assert (choice.arm, choice.overlay, choice.overlay_id) == ("control", None, None)


def test_arm_is_sticky_and_a_larger_share_keeps_the_smaller_ones_candidates() -> None:
    small = table(OverlayAssignment(tenant="acme", active=ov("ctl"), candidate=ov("cand"), canary_share=0.2))
    large = table(OverlayAssignment(tenant="acme", active=ov("ctl"), candidate=ov("cand"), canary_share=0.6))
    ids = [f"acme~{uuid.uuid4().hex}" for _ in range(500)]
    first = {t: choose_overlay(small, "acme", None, t).arm for t in ids}
    assert all(choose_overlay(small, "acme", None, t).arm == first[t] for t in ids)  # same id, same arm
    assert all(
        choose_overlay(large, "acme", None, t).arm == "candidate" for t in ids if first[t] == "candidate"
    )
    for t in ids:
        choice = choose_overlay(large, "acme", None, t)
        assert choice.overlay_id == ("cand" if choice.arm == "candidate" else "ctl")


def test_canary_share_is_honoured_within_tolerance() -> None:
    n = 20_000
    ids = [f"acme~run-{i}" for i in range(n)]  # sequential ids: the hash must still spread them
    for share in (0.05, 0.25, 0.5, 0.9):
        got = sum(share_point(t) < share for t in ids) / n
        tolerance = 4 * (share * (1 - share) / n) ** 0.5  # four standard errors of a binomial share
        assert abs(got - share) < tolerance, (share, got)
    assert all(0.0 <= share_point(t) < 1.0 for t in ids[:1000])


def test_no_candidate_means_control_whatever_the_share() -> None:
    only_active = table(OverlayAssignment(tenant="acme", active=ov("ctl"), canary_share=1.0))
    assert {choose_overlay(only_active, "acme", None, f"acme~{i}").arm for i in range(50)} == {"control"}
    everyone = table(
        OverlayAssignment(tenant="acme", active=ov("ctl"), candidate=ov("cand"), canary_share=1.0)
    )
    assert {choose_overlay(everyone, "acme", None, f"acme~{i}").arm for i in range(50)} == {"candidate"}


def test_listener_keeps_the_latest_per_scope_and_skips_what_it_cannot_attribute() -> None:
    listener = OverlayListener(BrokerConfig(bootstrap_servers="127.0.0.1:1"), "overlays")
    first = OverlayAssignment(tenant="acme", active=ov("v1"))
    second = OverlayAssignment(tenant="acme", active=ov("v2"))
    listener.apply(first.key, first.model_dump_json().encode())
    seen = listener.assignments
    listener.apply(second.key, second.model_dump_json().encode())
    assert listener.assignments["acme/*"].active.overlay_id == "v2"
    assert seen["acme/*"].active.overlay_id == "v1"  # a snapshot handed out is never changed
    listener.apply("globex/*", second.model_dump_json().encode())  # key is not the record's scope
    listener.apply("acme/x", b"not json")
    assert set(listener.assignments) == {"acme/*"}
    listener.apply("acme/*", None)  # a tombstone removes the scope
    assert listener.assignments == {}


def test_policy_arm_comes_from_the_narrowest_assignment_that_names_a_policy() -> None:
    pooled = OverlayAssignment(tenant="*", active_policy="4", candidate_policy="5", canary_share=0.5)
    own = OverlayAssignment(tenant="acme", active=ov("tenant-wide"))  # an overlay only: no policy
    assignments = table(pooled, own)
    versions = {choose_overlay(assignments, "acme", None, f"acme~t{i}").policy_version for i in range(200)}
    assert versions == {"4", "5"}
    choice = choose_overlay(assignments, "acme", None, "acme~t1")
    assert choice.overlay_id == "tenant-wide"  # the overlay still comes from the tenant's assignment
    pinned = OverlayAssignment(tenant="globex", active_policy="3")
    assert choose_overlay(table(pooled, pinned), "globex", None, "globex~t1").policy_version == "3"


def test_policy_arm_is_sticky_and_independent_of_the_overlay_arm() -> None:
    both = OverlayAssignment(
        tenant="acme", active=None, candidate=ov("cand"), canary_share=0.5, active_policy="1",
        candidate_policy="2",
    )  # fmt: skip
    arms = [choose_overlay(table(both), "acme", None, f"acme~t{i}") for i in range(400)]
    assert all(
        c.policy_version == choose_overlay(table(both), "acme", None, f"acme~t{i}").policy_version
        for i, c in enumerate(arms)
    )
    pairs = {(c.arm, c.policy_arm) for c in arms}
    assert pairs == {("control", "control"), ("control", "candidate"), ("candidate", "control"),
                     ("candidate", "candidate")}  # fmt: skip
    assert all((c.policy_arm == "candidate") == (c.policy_version == "2") for c in arms)
    none = OverlayAssignment(tenant="acme", active_policy="1", candidate_policy="2", canary_share=0.0)
    assert {choose_overlay(table(none), "acme", None, f"acme~t{i}").policy_version for i in range(50)} == {
        "1"
    }


def test_a_tenant_with_its_own_line_is_never_routed_to_the_pooled_one() -> None:
    from sluice.evolution import PolicyRoutes

    pooled = OverlayAssignment(tenant="*", active_policy="7")
    own = OverlayAssignment(tenant="acme", active_policy="acme.3")
    routes = PolicyRoutes(default_scope="own", scopes={"globex": "shared", "initech": "none"})
    assignments = table(pooled, own)
    assert choose_overlay(assignments, "acme", None, "acme~t1", routes).policy_version == "acme.3"
    assert (
        choose_overlay(assignments, "hooli", None, "hooli~t1", routes) is None
    )  # own line, none yet: default
    assert choose_overlay(assignments, "globex", None, "globex~t1", routes).policy_version == "7"
    assert choose_overlay(assignments, "initech", None, "initech~t1", routes).policy_version == "7"
    base = routes.model_copy(update={"untrained": "base"})
    assert choose_overlay(assignments, "initech", None, "initech~t1", base) is None
