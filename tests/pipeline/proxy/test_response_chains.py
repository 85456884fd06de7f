"""The response chains behind ``previous_response_id``: expansion, bounds, TTL, tenant isolation, erasure."""

from __future__ import annotations

import hashlib

from pipeline.proxy.config import ResponseChainConfig
from pipeline.proxy.openai_responses.chains import ResponseChains, message_bytes
from sluice.events import ErasureEvent


def digest(value: str) -> bytes:
    return hashlib.blake2b(value.encode(), digest_size=16, key=b"k").digest()


def store(**cfg: float) -> ResponseChains:
    return ResponseChains(ResponseChainConfig(**cfg), digest)


def turn(text: str) -> list[dict]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": f"Echo: {text}"}]


def conversation(
    chains: ResponseChains, tenant: str, tid: str, n: int, now: float = 0.0, prefix: str = "r"
) -> None:
    parent = None
    for i in range(n):
        assert chains.put(tenant, f"{prefix}{i}", parent, turn(f"{prefix} turn {i}"), tid, (), now)
        parent = f"{prefix}{i}"


def test_history_is_the_whole_conversation_oldest_first_and_branches() -> None:
    chains = store()
    conversation(chains, "acme", "acme~t1", 3)
    got = chains.history("acme", "r2", 1.0)
    assert got is not None and got.trajectory_id == "acme~t1"
    assert got.messages == turn("r turn 0") + turn("r turn 1") + turn("r turn 2")
    # continuing an older response branches: both tips expand to their own history
    assert chains.put("acme", "b", "r0", turn("branch"), "acme~t1", (), 2.0)
    assert chains.history("acme", "b", 2.0).messages == turn("r turn 0") + turn("branch")
    assert chains.history("acme", "r2", 2.0).messages[-1]["content"] == "Echo: r turn 2"
    assert chains.history("acme", "nope", 2.0) is None
    # what a caller does with an expanded history never changes what is kept
    got = chains.history("acme", "r2", 2.0)
    got.messages[0]["content"] = "overwritten"
    assert chains.history("acme", "r2", 2.0).messages[0]["content"] == "r turn 0"


def test_tenant_isolation_another_tenants_id_is_not_found() -> None:
    chains = store()
    conversation(chains, "acme", "acme~t1", 2)
    assert chains.history("globex", "r1", 1.0) is None
    assert chains.history("globex", "r0", 1.0) is None
    # the same response id in two tenants are two different responses
    assert chains.put("globex", "r1", None, turn("globex own"), "globex~t9", (), 1.0)
    assert chains.history("globex", "r1", 1.0).messages == turn("globex own")
    assert chains.history("acme", "r1", 1.0).messages == turn("r turn 0") + turn("r turn 1")
    # a globex response cannot name an acme response as its parent
    assert chains.put("globex", "g2", "r0", turn("sneaky"), "globex~t9", (), 1.0)
    assert chains.history("globex", "g2", 1.0).messages == turn("sneaky")


def test_ttl_counts_from_last_use_so_a_live_conversation_keeps_its_root() -> None:
    chains = store(ttl_s=10)
    conversation(chains, "acme", "acme~t1", 1, now=0.0)
    for t in (8.0, 16.0, 24.0):  # each continuation uses the whole chain
        assert chains.history("acme", "r0", t) is not None
    assert chains.history("acme", "r0", 34.5) is None  # 10.5 s unused
    assert len(chains) == 0 and chains.total_bytes == 0


def test_count_bound_drops_least_recently_used_conversations_whole() -> None:
    chains = store(max_responses=5)
    conversation(chains, "acme", "acme~a", 3, prefix="a")
    conversation(chains, "acme", "acme~b", 2, prefix="b")
    assert chains.history("acme", "a2", 1.0) is not None  # a is now more recent than b
    assert chains.put("acme", "c0", None, turn("c"), "acme~c", (), 2.0)
    assert len(chains) <= 5
    # b's root went first, and its continuation with it (a gap could not be expanded)
    assert chains.history("acme", "b0", 3.0) is None and chains.history("acme", "b1", 3.0) is None
    assert chains.history("acme", "a2", 3.0) is not None and chains.history("acme", "c0", 3.0) is not None


def test_byte_bound_holds_and_an_oversized_response_is_not_kept() -> None:
    one = message_bytes(turn("x" * 100))
    chains = store(max_bytes=3 * one)
    for i in range(10):
        chains.put("acme", f"r{i}", None, turn("x" * 100), f"acme~t{i}", (), float(i))
        assert chains.total_bytes <= 3 * one
    assert len(chains) == 3 and chains.history("acme", "r9", 10.0) is not None
    assert not chains.put("acme", "huge", None, turn("y" * 10 * one), "acme~h", (), 11.0)
    assert chains.history("acme", "huge", 11.0) is None and chains.total_bytes <= 3 * one


def test_zero_responses_keeps_nothing() -> None:
    chains = store(max_responses=0)
    assert not chains.put("acme", "r0", None, turn("a"), "acme~t", (), 0.0)
    assert chains.history("acme", "r0", 0.0) is None


def test_erasure_by_trajectory_tenant_and_subject() -> None:
    chains = store()
    conversation(chains, "acme", "acme~t1", 3, prefix="a")
    conversation(chains, "acme", "acme~t2", 2, prefix="b")
    conversation(chains, "globex", "globex~t1", 2, prefix="g")
    # a continuation into another trajectory (explicit header) is dropped with the chain it extends
    assert chains.put("acme", "x", "a2", turn("moved on"), "acme~t3", (), 1.0)

    erase_t1 = ErasureEvent(erasure_id="e1", scope="trajectory", target="acme~t1", trajectory_id="acme~t1")
    assert chains.forget(erase_t1) == 4
    assert chains.history("acme", "a0", 2.0) is None and chains.history("acme", "x", 2.0) is None
    assert chains.history("acme", "b1", 2.0) is not None

    # a subject named on one call of a trajectory erases every kept response of that trajectory
    assert chains.put("acme", "b2", "b1", turn("I am Ann"), "acme~t2", ("ann@example.com",), 3.0)
    assert chains.put("acme", "other", None, turn("unrelated"), "acme~t4", (), 3.0)
    erase_ann = ErasureEvent(erasure_id="e2", scope="subject", target="ann@example.com", tenant_scope="acme")
    assert chains.forget(erase_ann) == 3
    assert chains.history("acme", "b0", 4.0) is None and chains.history("acme", "other", 4.0) is not None

    erase_globex = ErasureEvent(erasure_id="e3", scope="tenant", target="globex")
    assert chains.forget(erase_globex) == 2
    assert chains.history("globex", "g1", 5.0) is None and len(chains) == 1
    assert chains.total_bytes == message_bytes(turn("unrelated"))
