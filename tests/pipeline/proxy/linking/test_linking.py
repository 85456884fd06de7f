"""History linking, deltas, token prefixes and the bounded maps (pure)."""

from __future__ import annotations

from pipeline.proxy.linking.canonical import event_message, link_chain, link_extend
from pipeline.proxy.linking.history_linker import HistoryLinker
from sluice.events import Action, Choice, Observation, StepEvent, message_hash, reconstruct_messages


def _turn(
    linker: HistoryLinker, msgs: list[dict], replies: list[str], now: float = 0.0, tenant: str = "t", **kw
):
    chain = link_chain(msgs)
    plan = linker.begin(tenant, chain, now, **kw)
    delta = [event_message(m, "m") for m in msgs[plan.prefix_count :]]
    reply_msgs = [{"role": "assistant", "content": r} for r in replies]
    reply = event_message(reply_msgs[0], "r") if reply_msgs else None
    linker.complete(plan, chain, delta, [link_extend(chain[-1], m) for m in reply_msgs], reply, now)
    step = StepEvent(
        trajectory_id=plan.trajectory_id,
        tenant=tenant,
        step_index=plan.step_index,
        observation=Observation(
            messages=delta, prefix_hash=plan.prefix_hash, prefix_message_count=plan.prefix_count
        ),
        action=Action(
            choices=[Choice(index=i, message=event_message(m, "r")) for i, m in enumerate(reply_msgs)]
        ),
    )
    return plan, step


def test_three_turns_link_by_history_with_deltas_only() -> None:
    linker = HistoryLinker(window_s=60, max_trajectories=100)
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u1"}]
    p0, s0 = _turn(linker, msgs, ["a1"])
    msgs += [{"role": "assistant", "content": "a1"}, {"role": "tool", "tool_call_id": "x", "content": "r"}]
    p1, s1 = _turn(linker, msgs, ["a2"])
    msgs += [{"role": "assistant", "content": "a2"}, {"role": "user", "content": "u3"}]
    p2, s2 = _turn(linker, msgs, ["a3"])
    assert p0.linked_by == "new" and p1.linked_by == p2.linked_by == "history"
    assert p0.trajectory_id == p1.trajectory_id == p2.trajectory_id
    assert [p.step_index for p in (p0, p1, p2)] == [0, 1, 2]
    assert [p.prefix_count for p in (p0, p1, p2)] == [0, 3, 5]
    assert [len(s.observation.messages) for s in (s0, s1, s2)] == [2, 1, 1]
    # prefix_hash is the event contract's hash of what reconstruction yields
    rebuilt = reconstruct_messages([s0, s1])
    assert p2.prefix_hash == message_hash(rebuilt[:5])


def test_continuing_from_another_choice_rebuilds_exactly() -> None:
    linker = HistoryLinker(window_s=60, max_trajectories=100)
    msgs = [{"role": "user", "content": "q"}]
    _, s0 = _turn(linker, msgs, ["c0", "c1"])
    msgs += [{"role": "assistant", "content": "c1"}, {"role": "user", "content": "more"}]
    p1, s1 = _turn(linker, msgs, ["done"])
    assert p1.trajectory_id == s0.trajectory_id and p1.prefix_count == 1
    assert [m.content for m in reconstruct_messages([s0, s1])] == ["q", "c1", "more", "done"]


def test_rewritten_history_starts_over_and_other_tenants_never_link() -> None:
    linker = HistoryLinker(window_s=60, max_trajectories=100)
    msgs = [{"role": "user", "content": "q"}]
    p0, _ = _turn(linker, msgs, ["a"])
    follow = msgs + [{"role": "assistant", "content": "a"}, {"role": "user", "content": "next"}]
    other, _ = _turn(linker, follow, ["b"], tenant="other")
    assert other.trajectory_id != p0.trajectory_id and other.linked_by == "new"
    p1, _ = _turn(
        linker, [{"role": "user", "content": "q"}, {"role": "assistant", "content": "edited"}], ["z"]
    )
    assert p1.trajectory_id != p0.trajectory_id


def test_explicit_ids_expiry_eviction_and_abandon() -> None:
    linker = HistoryLinker(window_s=10, max_trajectories=2)
    p0, _ = _turn(linker, [{"role": "user", "content": "a"}], ["x"], explicit_id="T1", explicit_by="header")
    p1, _ = _turn(linker, [{"role": "user", "content": "b"}], ["y"], explicit_id="T1", explicit_by="path")
    assert (p0.trajectory_id, p0.step_index, p1.step_index, p1.linked_by) == ("T1", 0, 1, "path")
    plan = linker.begin("t", link_chain([{"role": "user", "content": "c"}]), 1.0, "T1")
    linker.abandon(plan)  # rejected before going upstream: no index is skipped
    p2, _ = _turn(linker, [{"role": "user", "content": "d"}], ["w"], explicit_id="T1")
    assert p2.step_index == 2
    late, _ = _turn(
        linker, [{"role": "user", "content": "a"}, {"role": "assistant", "content": "x"}], ["q"], now=100.0
    )
    assert late.linked_by == "new"  # the window passed
    for i in range(5):
        _turn(linker, [{"role": "user", "content": f"n{i}"}], ["r"], now=100.0)
    assert len(linker) <= 2


def test_token_prefix_against_previous_prompt_plus_completion() -> None:
    linker = HistoryLinker(window_s=60, max_trajectories=10)
    p0, _ = _turn(linker, [{"role": "user", "content": "a"}], ["x"], explicit_id="T")
    assert linker.token_prefix(p0, [1, 2, 3], [4, 5]) == 0
    p1, _ = _turn(linker, [{"role": "user", "content": "b"}], ["y"], explicit_id="T")
    assert linker.token_prefix(p1, [1, 2, 3, 4, 5, 6, 7], [8]) == 5
    p2, _ = _turn(linker, [{"role": "user", "content": "c"}], ["z"], explicit_id="T")
    assert linker.token_prefix(p2, [1, 2, 9], [1]) == 0  # drift inside the first block: starts over
    p3, _ = _turn(linker, [{"role": "user", "content": "d"}], ["w"], explicit_id="T")
    prev = list(range(100, 140))  # 40 tokens: prompt 36 + completion 4
    assert linker.token_prefix(p3, prev[:36], prev[36:]) == 0  # drifted from step 2's tokens
    p4, _ = _turn(linker, [{"role": "user", "content": "e"}], ["v"], explicit_id="T")
    drifted = prev[:37] + [7] + prev[38:] + [1, 2, 3]  # retokenisation drift at token 37
    # rounded down to the block boundary before the drift (16-token blocks): never past it
    assert linker.token_prefix(p4, drifted, [5]) == 32


def test_snapshot_restore_keeps_numbering_and_links() -> None:
    linker = HistoryLinker(window_s=60, max_trajectories=10)
    msgs = [{"role": "user", "content": "q"}]
    p0, _ = _turn(linker, msgs, ["a"], now=5.0)
    linker.token_prefix(p0, [1, 2], [3])
    restored = HistoryLinker(window_s=60, max_trajectories=10)
    restored.restore(linker.snapshot(now=6.0), now=1000.0)
    p1, _ = _turn(
        restored,
        msgs + [{"role": "assistant", "content": "a"}, {"role": "user", "content": "n"}],
        ["b"],
        now=1000.0,
    )
    assert (p1.trajectory_id, p1.step_index, p1.prefix_count) == (p0.trajectory_id, 1, 2)
    assert restored.token_prefix(p1, [1, 2, 3, 4], [5]) == 3


def test_token_memory_is_bounded_over_all_trajectories() -> None:
    linker = HistoryLinker(window_s=60, max_trajectories=100, max_tokens=50, token_budget=100)
    plans = []
    for i in range(5):
        plan, _ = _turn(linker, [{"role": "user", "content": f"t{i}"}], ["r"], explicit_id=f"T{i}")
        linker.token_prefix(plan, list(range(30)), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        plans.append(plan)
    assert linker.tokens.total <= 100  # the bound under test
    late, _ = _turn(linker, [{"role": "user", "content": "x"}], ["r"], explicit_id="T0")
    assert linker.token_prefix(late, list(range(40)), [1]) == 0  # T0's tokens were dropped: full prompt
    newest, _ = _turn(linker, [{"role": "user", "content": "y"}], ["r"], explicit_id="T4")
    assert linker.token_prefix(newest, list(range(30)) + [1, 2], [1]) == 32
    big, _ = _turn(linker, [{"role": "user", "content": "z"}], ["r"], explicit_id="big")
    assert linker.token_prefix(big, list(range(60)), []) == 0  # over max_tokens: not kept at all
