"""Link chains from the per-trajectory cache: identical to hashing everything, hashing only what is new."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.linking.canonical import event_message, link_chain, link_extend
from pipeline.proxy.linking.history_linker import HistoryLinker, StepPlan
from pipeline.proxy.linking.link_chain_cache import LinkChainCache
from pipeline.proxy.openai_chat.protocol import ChatCompletionRequest
from pipeline.proxy.ops.metrics import ProxyMetrics
from pipeline.proxy.publishing.discard_publisher import DiscardPublisher
from pipeline.proxy.publishing.step_journal import StepJournal
from pipeline.proxy.recording.recorder import StepRecorder, Topics
from pipeline.proxy.recording.step import RawChoice
from pipeline.proxy.surfaces.auth import Caller
from pipeline.proxy.surfaces.context import CallContext
from pipeline.proxy.trajectories.seen import SeenTrajectories
from sluice.events import ErasureEvent


def _history(turns: int) -> list[dict[str, Any]]:
    """A system prompt, then per turn a user message, an assistant tool call and its result."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for t in range(turns):
        msgs.append({"role": "user", "content": [{"type": "text", "text": f"step {t}: go on"}]})
        call = {"id": f"c{t}", "type": "function", "function": {"name": "run", "arguments": f'{{"n": {t}}}'}}
        msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
        msgs.append({"role": "tool", "tool_call_id": f"c{t}", "content": f"ran {t}"})
    return msgs


_ANSWER = {"role": "assistant", "content": "done"}


class _Agent:
    """One linker fed by the cache, one by ``link_chain``: every step must come out the same."""

    def __init__(self) -> None:
        self.cache = LinkChainCache(hash_key=b"k" * 32)
        self.cached = HistoryLinker(window_s=600, max_trajectories=1000)
        self.plain = HistoryLinker(window_s=600, max_trajectories=1000)

    def step(self, msgs: list[dict[str, Any]], answer: dict[str, Any]) -> tuple[StepPlan, StepPlan, int]:
        """Both linkers take the call; returns their plans and how many messages the cache link-hashed."""
        before = self.cache.linked
        found = self.cache.chain("t", msgs)
        chain = link_chain(msgs)
        assert found.chain == chain
        plans = []
        for linker, c in ((self.cached, found.chain), (self.plain, chain)):
            plan = linker.begin("t", c, 0.0)
            delta = [event_message(m, "m") for m in msgs[plan.prefix_count :]]
            linker.complete(plan, c, delta, [link_extend(c[-1], answer)], event_message(answer, "r"), 0.0)
            linker.settle(plan)
            plans.append(plan)
        self.cache.remember("t", plans[0].trajectory_id, found.chain, found.packed)
        return plans[0], plans[1], self.cache.linked - before


def _same(a: StepPlan, b: StepPlan) -> None:
    assert (a.step_index, a.linked_by, a.prefix_count, a.prefix_hash) == (
        b.step_index,
        b.linked_by,
        b.prefix_count,
        b.prefix_hash,
    )


def test_two_hundred_turns_hash_only_new_messages_and_match_the_full_chain() -> None:
    agent = _Agent()
    full = _history(200)
    sent = 0
    for turn in range(200):
        n = 1 + 3 * turn + 1  # system + earlier turns + this turn's user message
        cached, plain, hashed = agent.step(full[:n], full[n])  # the reply: this turn's tool call
        _same(cached, plain)
        assert (cached.step_index, cached.linked_by) == (turn, "history" if turn else "new")
        # the previous input is reused, only what came after it is hashed (once it is long enough to keep)
        assert hashed == (n - sent if sent >= agent.cache.min_messages else n)
        sent = n
    assert (
        agent.cache.linked == n + 2 + 5
    )  # 200 calls of up to 599 messages: each hashed once (+ 2 short calls)


def test_a_retry_hashes_nothing() -> None:
    agent = _Agent()
    msgs = _history(200)
    _, _, first = agent.step(msgs, _ANSWER)
    cached, plain, again = agent.step(msgs, _ANSWER)
    _same(cached, plain)
    assert (first, again) == (len(msgs), 0)


def test_an_edit_at_turn_fifty_branches_like_the_full_chain() -> None:
    agent = _Agent()
    full = _history(200)
    for turn in range(0, 200, 10):
        agent.step(full[: 3 * turn + 2], full[3 * turn + 2])
    edited = [dict(m) for m in full]
    edited[3 * 50 + 1]["content"] = [{"type": "text", "text": "step 50: do something else"}]
    cached, plain, hashed = agent.step(edited, _ANSWER)
    _same(cached, plain)
    assert cached.linked_by == "history" and 0 < cached.prefix_count <= 3 * 50 + 1
    assert hashed == len(edited)  # its remembered input was edited: nothing to reuse, everything hashed
    # the branch is now the trajectory's last input: its next call hashes only what it adds
    _, _, next_hashed = agent.step(edited + [_ANSWER, {"role": "user", "content": "more"}], _ANSWER)
    assert next_hashed == 2


def test_a_dropped_tail_and_a_restart_give_the_full_chain() -> None:
    agent = _Agent()
    full = _history(200)
    agent.step(full, _ANSWER)
    cached, plain, hashed = agent.step(full[:30], _ANSWER)
    _same(cached, plain)
    assert hashed == 30
    restarted = LinkChainCache(hash_key=b"k" * 32)  # cache empty: everything hashed, same chain
    found = restarted.chain("t", full)
    assert found.chain == link_chain(full) and restarted.linked == len(full)


def test_inputs_that_pack_alike_only_when_equal() -> None:
    cache = LinkChainCache(min_messages=1)
    one = [{"role": "user", "content": [{"type": "x", "v": float("nan")}]}]
    other = [{"role": "user", "content": [{"type": "x", "v": None}]}]
    cache.remember("t", "a", cache.chain("t", one).chain, cache.chain("t", one).packed)
    assert cache.chain("t", other + [{"role": "user", "content": "u"}]).chain == link_chain(
        other + [{"role": "user", "content": "u"}]
    )
    ints = [{"role": "user", "content": [{"type": "x", "v": 1}]}]
    floats = [{"role": "user", "content": [{"type": "x", "v": 1.0}]}]
    cache.remember("t", "b", cache.chain("t", ints).chain, cache.chain("t", ints).packed)
    assert cache.chain("t", floats).chain == link_chain(floats)
    huge = [{"role": "user", "content": [{"type": "x", "v": 2**80}]}]  # msgpack can not hold it
    found = cache.chain("t", huge)
    assert found.chain == link_chain(huge) and found.packed is None


def test_tenants_do_not_share_inputs() -> None:
    cache = LinkChainCache()
    msgs = _history(5)
    found = cache.chain("a", msgs)
    cache.remember("a", "t1", found.chain, found.packed)
    before = cache.linked
    assert cache.chain("b", msgs).chain == found.chain
    assert cache.linked - before == len(msgs)


def test_short_calls_are_hashed_whole_and_not_kept() -> None:
    cache = LinkChainCache()
    msgs = _history(2)  # 7 messages: hashing them costs less than keeping them
    found = cache.chain("t", msgs)
    cache.remember("t", "t1", found.chain, found.packed)
    assert found.chain == link_chain(msgs) and found.packed is None and len(cache) == 0


def test_memory_stays_under_the_budget() -> None:
    budget = 20_000
    cache = LinkChainCache(max_bytes=budget)
    for i in range(50):
        msgs = [{"role": "user", "content": f"trajectory {i}"}] + _history(10)
        found = cache.chain("t", msgs)
        cache.remember("t", f"t{i}", found.chain, found.packed)
        assert cache.held_bytes <= budget
    assert 0 < len(cache) < 50
    cache.clear()
    assert (len(cache), cache.held_bytes) == (0, 0)


@pytest.mark.parametrize("turns", [0, 60])
def test_the_estimate_covers_what_python_holds(turns: int) -> None:
    """The budget's unit is the real cost: traced allocations stay within the estimate."""
    cache = LinkChainCache(max_bytes=1 << 40, min_messages=1)
    ids = [f"t:{i:030d}" for i in range(300)]  # held by the linker in the proxy
    calls = [[{"role": "user", "content": f"task {i}"}] + _history(turns) for i in range(len(ids))]
    tracemalloc.start()
    try:
        for tid, msgs in zip(ids, calls, strict=True):
            found = cache.chain("t", msgs)
            cache.remember("t", tid, found.chain, found.packed)
        del found
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert 0.5 * cache.held_bytes <= used <= cache.held_bytes


def test_a_bad_new_message_is_the_same_400_as_without_the_cache() -> None:
    cache = LinkChainCache()
    msgs = _history(3)
    found = cache.chain("t", msgs)
    cache.remember("t", "t1", found.chain, found.packed)
    bad = msgs + [{"role": "wizard", "content": "x"}]
    with pytest.raises(ApiError) as cached_err:
        cache.chain("t", bad)
    with pytest.raises(ApiError) as plain_err:
        link_chain(bad)
    assert cached_err.value.message == plain_err.value.message


def test_the_step_recorder_hashes_only_new_messages_and_forgets_on_erasure(tmp_path: Path) -> None:
    cache = LinkChainCache()
    recorder = StepRecorder(
        HistoryLinker(600.0, 100),
        DiscardPublisher(),
        Topics("steps", "rewards", "deadletter"),
        ProxyMetrics(),
        StepJournal(tmp_path / "journal.jsonl"),
        publishing=True,
        on_journal_full=lambda: None,
        seen=SeenTrajectories(100),
        chains=cache,
    )
    caller = Caller(tenant="acme", data_class="internal", consent_training=True)
    backend = BackendConfig(name="echo", base_url="http://127.0.0.1:1/v1")
    full = _history(20)
    steps = []
    for turn in range(20):
        msgs = full[: 3 * turn + 2]
        ctx = CallContext(caller, None, "header", None, {}, datetime.now(UTC), 0.0)
        request = ChatCompletionRequest(model="m", messages=msgs)
        step = recorder.begin(ctx, request, backend=backend, operation="chat", provider="openai")
        step.end(200, None, 1.0, choices=[RawChoice(0, dict(full[3 * turn + 2]), "tool_calls")])
        recorder.finish(step)
        steps.append(step.plan)
    assert {p.trajectory_id for p in steps} == {steps[0].trajectory_id}
    assert [p.step_index for p in steps] == list(range(20))
    assert cache.linked == 3 * 19 + 2 + 2 + 5  # each message hashed once over 20 calls (+ 2 short calls)
    assert recorder.forget(ErasureEvent(erasure_id="e1", scope="tenant", target="acme")) == 1
    assert len(cache) == 0
