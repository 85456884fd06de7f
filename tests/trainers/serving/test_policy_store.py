"""PolicyStore and the engine's between-batch swap, in process with the tiny model."""

from __future__ import annotations

import asyncio

import pytest
import torch

from trainers.serving.engine import GenerateEngine, OneVersion
from trainers.serving.policy_store import (
    BadTensors,
    DefaultNotDiscardable,
    PolicyStore,
    TooManyVersions,
    VersionNotKept,
    VersionReused,
)
from trainers.tiny_model import build_tiny

EMBED, HEAD = "model.embed_tokens.weight", "lm_head.weight"
LAYER = "model.layers.0.mlp.up_proj.weight"


@pytest.fixture
def model() -> torch.nn.Module:
    return build_tiny()[0]


def swap(store: PolicyStore, version: str, tensors: dict[str, torch.Tensor]) -> None:
    store.apply(store.prepare_update(version, tensors))


def test_partial_update_replaces_only_its_tensors_and_shares_the_rest(model: torch.nn.Module) -> None:
    store = PolicyStore(model, "sluice-tiny")
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    new = torch.randn_like(before[LAYER])
    prepared = store.prepare_update("1", {LAYER: new})
    assert prepared.replaced == 1
    base = store._versions["0"].tensors
    assert all(prepared.tensors[k] is base[k] for k in base if k != LAYER)  # nothing else copied
    assert torch.equal(model.state_dict()[LAYER], before[LAYER])  # checking alone swaps nothing
    store.apply(prepared)
    after = model.state_dict()
    assert torch.equal(after[LAYER], new)
    assert all(torch.equal(after[k], before[k]) for k in before if k != LAYER)
    assert store.serving == "1" and store.kept() == ["0", "1"]
    assert [h.action for h in store.status().history] == ["load", "update"]


def test_tied_weight_is_one_slot_under_two_names(model: torch.nn.Module) -> None:
    store = PolicyStore(model, "sluice-tiny")
    new = torch.randn_like(model.state_dict()[EMBED])
    swap(store, "1", {HEAD: new})
    assert torch.equal(model.lm_head.weight, new) and torch.equal(model.model.embed_tokens.weight, new)
    with pytest.raises(BadTensors, match="tied"):
        store.prepare_update("2", {HEAD: new, EMBED: new + 1})
    swap(store, "2", {HEAD: new * 2, EMBED: new * 2})  # both names, one value: fine


def test_bad_updates_are_refused_with_the_reason(model: torch.nn.Module) -> None:
    store = PolicyStore(model, "sluice-tiny")
    w = model.state_dict()[LAYER]
    with pytest.raises(BadTensors, match="unknown tensor names: model.nope"):
        store.prepare_update("1", {"model.nope": w})
    with pytest.raises(BadTensors, match="shape"):
        store.prepare_update("1", {LAYER: w[:1]})
    with pytest.raises(BadTensors, match="floating-point"):
        store.prepare_update("1", {LAYER: w.long()})
    with pytest.raises(BadTensors, match="no tensors"):
        store.prepare_update("1", {})
    half = store.prepare_update("1", {LAYER: w.half()})
    assert half.tensors[LAYER].dtype == torch.float32  # cast to the served dtype


def test_names_are_never_reused_and_only_kept_versions_roll_back(model: torch.nn.Module) -> None:
    store = PolicyStore(model, "sluice-tiny", keep=2)
    w = model.state_dict()[LAYER].clone()
    with pytest.raises(VersionReused):
        store.prepare_update("0", {LAYER: w})
    swap(store, "1", {LAYER: w + 1})
    swap(store, "2", {LAYER: w + 2})
    assert store.kept() == ["0", "1", "2"]  # keep=2 besides the base, which is never evicted
    swap(store, "3", {LAYER: w + 3})
    assert store.kept() == ["0", "2", "3"]  # "1" evicted: the least recently served
    for reused in ("0", "1", "2", "3"):  # evicted or kept, a used name stays used
        with pytest.raises(VersionReused):
            store.prepare_update(reused, {LAYER: w})
    with pytest.raises(VersionNotKept):
        store.prepare_rollback("1")
    store.apply(store.prepare_rollback("2"))
    assert torch.equal(model.state_dict()[LAYER], w + 2)
    assert store.serving == "2" and store.kept()[-1] == "2"  # least recently served first
    store.apply(store.prepare_rollback("0"))  # the base stays a rollback target however many came after
    assert torch.equal(model.state_dict()[LAYER], w) and store.serving == "0"
    assert [h.action for h in store.history] == ["load", "update", "update", "update", "rollback", "rollback"]


def test_engine_swaps_between_batches_and_tags_every_token(model: torch.nn.Module) -> None:
    tok = build_tiny()[1]
    store = PolicyStore(model, "sluice-tiny")
    engine = GenerateEngine(model, tok, versions=store).start()
    w = model.state_dict()[LAYER].clone()
    args = {"prompt_ids": tok("12345")["input_ids"], "n": 2, "max_tokens": 40, "temperature": 1.0,
            "top_p": 1.0, "seed": 3, "stop_ids": frozenset(), "stop": ()}  # fmt: skip

    async def scenario() -> tuple[list[str], list[str], float]:
        first: list[str] = []
        started = asyncio.Event()

        async def run_first() -> None:
            async for ev in engine.submit(args):
                first.append(ev.version)
                started.set()

        task = asyncio.create_task(run_first())
        await started.wait()  # its batch is decoding now
        prepared = store.prepare_update("1", {LAYER: w * 3})
        _, waited = await engine.between_batches(lambda: store.apply(prepared))
        assert task.done()  # the swap ran only once the running batch had finished
        second = [ev.version async for ev in engine.submit(args)]
        await task
        return first, second, waited

    try:
        first, second, waited = asyncio.run(scenario())
    finally:
        engine.stop()
    assert len(first) == 2 * 40 + 2 and set(first) == {"0"}  # every token and both results
    assert set(second) == {"1"}
    assert waited >= 0


def test_a_failed_swap_reaches_its_caller_and_the_engine_goes_on(model: torch.nn.Module) -> None:
    tok = build_tiny()[1]
    engine = GenerateEngine(model, tok, versions=OneVersion("0")).start()

    def boom() -> None:
        raise RuntimeError("swap failed")

    async def scenario() -> int:
        with pytest.raises(RuntimeError, match="swap failed"):
            await engine.between_batches(boom)
        args = {"prompt_ids": [5, 6], "n": 1, "max_tokens": 3, "temperature": 0.0, "top_p": 1.0,
                "seed": None, "stop_ids": frozenset(), "stop": ()}  # fmt: skip
        return len([ev async for ev in engine.submit(args)])

    try:
        assert asyncio.run(scenario()) == 4
    finally:
        engine.stop()


def test_candidates_roles_promote_discard_and_the_cap(model: torch.nn.Module) -> None:
    store = PolicyStore(model, "sluice-tiny", keep=2, max_versions=5)
    w = model.state_dict()[LAYER].clone()
    store.apply(store.prepare_update("c1", {LAYER: w + 1}, role="candidate"))
    assert store.serving == "0" and torch.equal(model.state_dict()[LAYER], w)  # the default did not change
    assert store.resolve("c1") == "c1" and store.resolve("nope") == "0" and store.resolve(None) == "0"
    store.apply(store.prepare_update("c2", {HEAD: model.state_dict()[HEAD] * 2}, "candidate", parent="c1"))
    info = store.info("c2")
    assert info is not None and (info.role, info.parent, info.tensors) == ("candidate", "c1", 1)
    assert info.added_bytes == model.state_dict()[HEAD].numel() * 4  # the tied head, counted once
    assert store._versions["c2"].tensors[LAYER] is store._versions["c1"].tensors[LAYER]  # shared, not copied
    swap(store, "1", {LAYER: w + 3})
    swap(store, "2", {LAYER: w + 4})  # keep=2 besides the base: nothing evicted yet
    assert set(store.kept()) == {"0", "c1", "c2", "1", "2"} and store.candidates() == ["c1", "c2"]
    with pytest.raises(TooManyVersions):  # max_versions=5
        store.check_push("3", "candidate")
    swap(store, "3", {LAYER: w + 5})  # a served push evicts a kept version ("1", never the base): it fits
    with pytest.raises(VersionNotKept):
        store.prepare_update("4", {LAYER: w}, parent="1")  # "1" was evicted
    store.apply(store.prepare_select("c2", "promote"))
    assert store.serving == "c2" and store.role("c2") == "default" and store.candidates() == ["c1"]
    assert torch.equal(model.state_dict()[LAYER], w + 1)  # c2 = c1's layer + its own head
    with pytest.raises(DefaultNotDiscardable):
        store.discard("c2")
    store.discard("c1")
    with pytest.raises(VersionNotKept):
        store.discard("c1")
    with pytest.raises(VersionReused):  # discarded names stay used
        store.check_new_name("c1")
    roles = {i.version: i.role for i in store.status().kept}
    assert roles == {"0": "kept", "3": "kept", "c2": "default"}  # the promotion evicted "2"
    actions = [(h.action, h.version) for h in store.history][-3:]
    assert actions == [("update", "3"), ("promote", "c2"), ("discard", "c1")]


def test_engine_decodes_one_version_per_batch_and_takes_turns(model: torch.nn.Module) -> None:
    """A flood of default jobs and one candidate job queued behind it: the candidate gets the next batch, not
    the last one, and every batch is decoded by one version (its tokens match a forward pass of it)."""
    import threading

    tok = build_tiny()[1]
    store = PolicyStore(model, "sluice-tiny")
    w = model.state_dict()[LAYER].clone()
    store.apply(store.prepare_update("c", {LAYER: w * 3}, role="candidate"))
    engine = GenerateEngine(model, tok, max_batch=1, versions=store).start()
    args = {"prompt_ids": tok("12345")["input_ids"], "n": 1, "max_tokens": 6, "temperature": 1.0,
            "top_p": 1.0, "seed": 3, "stop_ids": frozenset(), "stop": ()}  # fmt: skip
    hold = threading.Event()

    async def scenario() -> list[tuple[str, str]]:
        finished: list[tuple[str, str]] = []
        blocked = asyncio.create_task(engine.between_batches(hold.wait))  # the thread waits: jobs queue up

        async def one(name: str, version: str | None) -> None:
            seen = {ev.version async for ev in engine.submit({**args, "version": version})}
            finished.append((name, ",".join(sorted(seen))))

        tasks = [asyncio.create_task(one(f"d{i}", None)) for i in range(4)]
        await asyncio.sleep(0.05)
        tasks.append(asyncio.create_task(one("cand", "c")))
        tasks.append(asyncio.create_task(one("gone", "no-such-version")))
        await asyncio.sleep(0.05)
        hold.set()
        await blocked
        await asyncio.gather(*tasks)
        return finished

    try:
        finished = asyncio.run(scenario())
    finally:
        engine.stop()
    order = [name for name, _ in finished]
    assert dict(finished) == {"d0": "0", "d1": "0", "d2": "0", "d3": "0", "cand": "c", "gone": "0"}
    assert order.index("cand") == 1  # round robin: the candidate's turn comes right after the first batch
    assert engine.batches == 6 and store.active == "0"
