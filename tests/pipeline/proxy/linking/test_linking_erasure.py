"""The linker keeps hashes only, and forgets what an erasure covers (pure)."""

from __future__ import annotations

import json

from pipeline.proxy.linking.canonical import link_chain
from pipeline.proxy.linking.history_linker import HistoryLinker
from sluice.events import ErasureEvent

KEY = bytes(range(32))


def _step(linker: HistoryLinker, tenant: str, tid: str, text: str, subjects: tuple[str, ...] = ()):
    msgs = [{"role": "user", "content": text}]
    chain = link_chain(msgs)
    plan = linker.begin(tenant, chain, 1.0, explicit_id=tid, subjects=subjects)
    linker.complete(plan, chain, [], [], None, 1.0)
    return plan


def test_snapshot_holds_no_token_ids_text_or_subject_ids() -> None:
    linker = HistoryLinker(window_s=60, max_trajectories=10, hash_key=KEY)
    plan = _step(linker, "acme", "acme~t1", "SECRET-PROMPT-TEXT", subjects=("subject-4711",))
    prompt = [987_654_321 + i for i in range(40)]
    linker.token_prefix(plan, prompt, [123_456_789])
    text = json.dumps(linker.snapshot(now=2.0))
    assert "SECRET-PROMPT-TEXT" not in text and "subject-4711" not in text
    assert "987654321" not in text and "123456789" not in text
    restored = HistoryLinker(window_s=60, max_trajectories=10, hash_key=KEY)
    restored.restore(json.loads(text), now=2.0)
    nxt = restored.begin("acme", link_chain([{"role": "user", "content": "n"}]), 2.0, explicit_id="acme~t1")
    # the prefix is still found from the digests alone (append-only: exact)
    assert restored.token_prefix(nxt, [*prompt, 123_456_789, 5, 6], [7]) == 41


def test_forget_by_trajectory_subject_and_tenant_and_remember_erased_ids() -> None:
    linker = HistoryLinker(window_s=60, max_trajectories=10, hash_key=KEY)
    _step(linker, "acme", "acme~a", "x", subjects=("s-1",))
    _step(linker, "acme", "acme~b", "y", subjects=("s-2",))
    _step(linker, "beta", "beta~c", "z", subjects=("s-1",))
    _step(linker, "beta", "beta~d", "w")
    by_id = ErasureEvent(erasure_id="e1", scope="trajectory", target="acme~b", trajectory_id="acme~b")
    assert linker.forget(by_id) == 1 and linker.is_erased("acme~b") and not linker.is_erased("acme~a")
    # a tenant's own subject erasure reaches only its own trajectories
    own = ErasureEvent(erasure_id="e2", scope="subject", target="s-1", tenant_scope="beta")
    assert linker.forget(own) == 1 and linker.is_erased("beta~c") and not linker.is_erased("acme~a")
    assert linker.forget(ErasureEvent(erasure_id="e3", scope="tenant", target="beta")) == 1
    assert linker.is_erased("beta~d") and len(linker) == 1
    assert linker.forget(ErasureEvent(erasure_id="e4", scope="subject", target="s-1")) == 1
    assert len(linker) == 0
    restored = HistoryLinker(window_s=60, max_trajectories=10, hash_key=KEY)
    restored.restore(linker.snapshot(now=2.0), now=2.0)
    assert all(restored.is_erased(t) for t in ("acme~a", "acme~b", "beta~c", "beta~d"))
