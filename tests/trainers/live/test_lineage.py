"""A trained version's lineage: each trajectory version once with its rows, tenants and reward sources."""

from __future__ import annotations

from sluice.evolution import ALL_TENANTS
from trainers.live.lineage import UnpublishedRows, build_lineage, weights_proposal
from trainers.live.samples import LiveRow, LiveSample


def row(tid: str, version: int, tenant: str, sources: list[str], step: int = 0) -> LiveRow:
    sample = LiveSample(
        trajectory_id=tid, version=version, step_index=step, prompt_ids=[1, 2], token_ids=[3], reward=0.5,
        policy_version=0, group_key="g", baseline_key="g", tenant=tenant, reward_sources=sources,
    )  # fmt: skip
    return LiveRow(sample=sample, advantage=1.0)


def test_lineage_counts_each_trajectory_version_once_with_its_rows() -> None:
    rows = [
        row("acme~a", 2, "acme", ["api"], 0),
        row("acme~a", 2, "acme", ["api"], 1),
        row("acme~a", 3, "acme", ["api", "harvest"], 0),  # a later version of the same trajectory
        row("globex~b", 1, "globex", []),
    ]
    lin = build_lineage(rows, "7", "6")
    assert [(i.trajectory_id, i.version, i.samples) for i in lin.items] == [
        ("acme~a", 2, 2),
        ("acme~a", 3, 1),
        ("globex~b", 1, 1),
    ]
    assert lin.samples == 4 and lin.parent == "6" and lin.version == "7" and lin.promotion == "gated"
    assert lin.tenants == {"acme": 3, "globex": 1}
    assert lin.reward_sources == {"api": 3, "harvest": 1, "unknown": 1}


def test_the_weights_proposal_carries_the_lineage_and_names_the_version() -> None:
    lin = build_lineage([row("acme~a", 1, "acme", ["api"])], "3", "2", "direct")
    p = weights_proposal(lin)
    assert p.surface == "weights" and p.policy_version == "3" and p.tenant == ALL_TENANTS
    assert p.lineage == lin and "from v2" in p.rationale and "acme: 1" in p.rationale


def test_a_version_published_after_several_updates_names_the_rows_of_all_of_them() -> None:
    pending = UnpublishedRows()
    pending.trained("acme", [row("acme~a", 1, "acme", ["api"])])  # update 1: not published (push_every 2)
    pending.trained("acme", [row("acme~b", 1, "acme", ["api"])])  # update 2: published as acme.2
    pending.trained("globex", [row("globex~c", 1, "globex", ["api"])])  # another scope's own rows
    lin = build_lineage(pending.since_parent("acme"), "acme.2", "0", scope="acme")
    assert [i.trajectory_id for i in lin.items] == ["acme~a", "acme~b"] and lin.samples == 2
    pending.published("acme")
    pending.trained("acme", [row("acme~d", 1, "acme", ["api"])])
    pending.trained("acme", [row("acme~e", 1, "acme", ["api"])], reset=True)  # acme.2's line turned down
    assert [r.sample.trajectory_id for r in pending.since_parent("acme")] == ["acme~e"]
    assert [r.sample.trajectory_id for r in pending.since_parent("globex")] == ["globex~c"]
