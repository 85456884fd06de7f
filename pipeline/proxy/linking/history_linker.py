"""Linking: ``HistoryLinker`` finds a call's trajectory and the part of its messages that is new (pure).

A trajectory is named explicitly (header, ``/t/{id}`` URL prefix, or the response a Responses API call
continues with ``previous_response_id``) or found by its history: after each step the proxy remembers,
per tenant, the link hash of "input + assistant reply" (one per choice when n > 1) for ``link_window_s``. A later call whose messages start with such a history extends that
trajectory; anything else starts a new one.

Within a trajectory the proxy keeps the link/exact hashes of the history a consumer rebuilds with
``sluice.events.reconstruct_messages`` (step boundaries only), so the observation of the next step carries
only the messages after the longest matching boundary. Because that history uses choice 0 of each step,
continuing from another choice matches the boundary before the reply and re-sends the chosen reply in the
delta: reconstruction stays exact.

The link chain a call brings (``chain[k]``: rolling link hash of its first k messages) comes from
``link_chain_cache.LinkChainCache``, which hashes only the messages new since the trajectory's last input.

Departure from the usual recipe: the maps are bounded (LRU + time window), so memory stays flat under any
traffic; a forgotten trajectory simply starts over (prefix_message_count = 0, full messages).

Hashes only: the state (and its snapshot, ``links.json``) holds message hashes, keyed BLAKE2b digests of
token-id blocks and of data-subject ids, never message text or token ids. The token prefix of the next
step is found by ``token_prefix_cache.TokenPrefixCache`` (keyed digests of the previous step's tokens).

Erasure: ``forget`` drops every state an ``ErasureEvent`` covers (by trajectory, tenant or subject digest),
the history links pointing at them, and remembers the erased ids (digests, bounded) so that a later step,
reward or end naming one is refused.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from pipeline.proxy.linking.token_prefix_cache import TokenPrefixCache
from sluice.events import ErasureEvent, Message, message_hash, new_id, scoped_trajectory_id

ERASED_LIMIT = 1_000_000  # erased trajectory ids remembered (16 bytes each)

LinkedBy = Literal["header", "path", "history", "response", "new"]


class _Pending:
    """An exact hash not computed yet: ``message_hash(messages, seed of base)``."""

    __slots__ = ("base", "messages")

    def __init__(self, base: str | Boundary, messages: list[Message]) -> None:
        self.base, self.messages = base, messages


# (message count of the reconstructed history up to here, lenient link hash, exact message_hash or pending).
# Plain tuples: once settled they hold only atoms, so the garbage collector stops tracking them and a
# linker remembering 100k trajectories adds little to GC pauses.
Boundary = tuple[int, bytes, "str | _Pending"]


@dataclass(slots=True)
class TrajectoryState:
    tenant: str
    trajectory_id: str
    last_seen: float
    next_step: int = 0
    boundaries: tuple[Boundary, ...] = ()
    unsettled: bool = False
    tools_fp: str | None = None
    ended: bool = False
    subjects: frozenset[bytes] = field(default_factory=frozenset)  # keyed digests of subject ids


@dataclass(slots=True)
class StepPlan:
    """Where a call sits in its trajectory, decided before it goes upstream."""

    tenant: str
    trajectory_id: str
    step_index: int
    linked_by: LinkedBy
    prefix_count: int = 0
    prefix_hash: str = ""
    tools_changed: bool = False
    prev_tools_fp: str | None = None


class HistoryLinker:
    """Bounded per-tenant maps: history hash -> trajectory, and trajectory -> its state."""

    def __init__(
        self,
        window_s: float,
        max_trajectories: int,
        max_tokens: int = 262_144,
        token_budget: int = 20_000_000,
        hash_key: bytes = b"",
    ) -> None:
        self.window_s = window_s
        self.max_trajectories = max_trajectories
        self.hash_key = hash_key
        self.tokens = TokenPrefixCache(hash_key, max_tokens, token_budget)
        self._states: OrderedDict[tuple[str, str], TrajectoryState] = OrderedDict()
        self._histories: OrderedDict[tuple[str, bytes], tuple[str, float]] = OrderedDict()
        self._erased: OrderedDict[bytes, None] = OrderedDict()

    def digest(self, value: str) -> bytes:
        """Keyed digest of an id (subject ids, erased trajectory ids): what the state keeps of it."""
        return hashlib.blake2b(value.encode(), digest_size=16, key=self.hash_key).digest()

    def __len__(self) -> int:
        return len(self._states)

    # ------------------------------------------------------------------ lookups

    def _state(self, tenant: str, tid: str, now: float) -> TrajectoryState | None:
        st = self._states.get((tenant, tid))
        if st is None or now - st.last_seen > self.window_s:
            return None
        return st

    def extendable(self, tenant: str, trajectory_id: str, now: float) -> bool:
        """Whether a next step would continue this trajectory's numbering (held, in the window, not ended)."""
        st = self._state(tenant, trajectory_id, now)
        return st is not None and not st.ended

    def _by_history(self, tenant: str, chain: list[bytes], now: float) -> TrajectoryState | None:
        for k in range(len(chain) - 1, 0, -1):
            hit = self._histories.get((tenant, chain[k]))
            if hit is None or now - hit[1] > self.window_s:
                continue
            st = self._state(tenant, hit[0], now)
            if st is not None and not st.ended:
                return st
        return None

    def _evict(self, now: float) -> None:
        states, histories = self._states, self._histories
        while states:
            first = next(iter(states.values()))
            if len(states) <= self.max_trajectories and now - first.last_seen <= self.window_s:
                break
            key, _ = states.popitem(last=False)
            self.tokens.drop(key)
        max_hist = 4 * self.max_trajectories
        while histories:
            _, (_, ts) = next(iter(histories.items()))
            if len(histories) <= max_hist and now - ts <= self.window_s:
                break
            histories.popitem(last=False)

    # ------------------------------------------------------------------ a step

    def begin(
        self,
        tenant: str,
        chain: list[bytes],
        now: float,
        explicit_id: str | None = None,
        explicit_by: LinkedBy = "header",
        tools_fp: str | None = None,
        subjects: tuple[str, ...] = (),
    ) -> StepPlan:
        """Assign the call to a trajectory and a step index; find the prefix it extends.

        ``chain[k]`` is the link hash of the call's first k messages (``canonical.link_chain``).
        """
        linked_by: LinkedBy
        if explicit_id is not None:
            st = self._state(tenant, explicit_id, now)
            linked_by = explicit_by
            if st is None:
                st = TrajectoryState(tenant, explicit_id, now)
                self._states[(tenant, explicit_id)] = st
            st.ended = False
        else:
            st = self._by_history(tenant, chain, now)
            linked_by = "history"
            if st is None:
                tid = scoped_trajectory_id(tenant, new_id())
                st = TrajectoryState(tenant, tid, now)
                self._states[(tenant, tid)] = st
                linked_by = "new"
        st.last_seen = now
        if subjects:
            st.subjects = st.subjects | {self.digest(s) for s in subjects}
        self._states.move_to_end((tenant, st.trajectory_id))
        plan = StepPlan(tenant, st.trajectory_id, st.next_step, linked_by)
        st.next_step += 1
        n = len(chain) - 1
        if st.unsettled:
            self._settle(st)
        for count, link, exact in reversed(st.boundaries):
            if count <= n and chain[count] == link:
                plan.prefix_count, plan.prefix_hash = count, exact  # type: ignore[assignment]
                break
        first = plan.step_index == 0
        plan.tools_changed = (tools_fp is not None) if first else tools_fp != st.tools_fp
        plan.prev_tools_fp, st.tools_fp = st.tools_fp, tools_fp
        self._evict(now)
        return plan

    def abandon(self, plan: StepPlan) -> None:
        """Undo ``begin`` for a call rejected before it went upstream (no step index is skipped)."""
        st = self._states.get((plan.tenant, plan.trajectory_id))
        if st is None or st.next_step != plan.step_index + 1:
            return
        st.next_step -= 1
        st.tools_fp = plan.prev_tools_fp
        if plan.linked_by == "new" and st.next_step == 0:
            del self._states[(plan.tenant, plan.trajectory_id)]
            self.tokens.drop((plan.tenant, plan.trajectory_id))

    def complete(
        self,
        plan: StepPlan,
        chain: list[bytes],
        delta: list[Message],
        choice_links: list[bytes],
        reply: Message | None,
        now: float,
    ) -> None:
        """Remember the history after the step: boundaries for the next delta, hashes for linking.

        ``choice_links[i]`` is the link hash of input + choice i's reply; ``reply`` is choice 0 as recorded.
        """
        st = self._state(plan.tenant, plan.trajectory_id, now)
        if st is None:
            return
        n = len(chain) - 1
        kept = [b for b in st.boundaries if b[0] <= plan.prefix_count]
        inp: Boundary = (n, chain[n], _Pending(plan.prefix_hash, delta))
        base: str | Boundary = plan.prefix_hash  # the input re-sent a known boundary: the reply extends it
        if n > plan.prefix_count or not kept:
            kept.append(inp)
            base = inp
        if reply is not None and choice_links:
            kept.append((n + 1, choice_links[0], _Pending(base, [reply])))
        st.boundaries = tuple(kept)
        st.unsettled = True
        st.last_seen = now
        for link in choice_links:
            key = (plan.tenant, link)
            self._histories[key] = (plan.trajectory_id, now)
            self._histories.move_to_end(key)
        self._evict(now)

    def settle(self, plan: StepPlan) -> None:
        """Hash the step's boundaries now (after the response went out) so no message stays referenced."""
        st = self._states.get((plan.tenant, plan.trajectory_id))
        if st is not None and st.unsettled:
            self._settle(st)

    @staticmethod
    def _settle(st: TrajectoryState) -> None:
        resolved: dict[int, str] = {}
        out: list[Boundary] = []
        for b in st.boundaries:
            count, link, exact = b
            if isinstance(exact, _Pending):
                base = exact.base
                seed = base if isinstance(base, str) else resolved[id(base)]
                exact = message_hash(exact.messages, seed) if exact.messages else seed
            resolved[id(b)] = exact
            out.append((count, link, exact))
        st.boundaries = tuple(out)
        st.unsettled = False

    def token_prefix(self, plan: StepPlan, prompt_ids: list[int], completion_ids: list[int] | None) -> int:
        """prompt_token_prefix_len for this step, and remember prompt + completion (as digests) for the
        next one (``token_prefix_cache``); 0 for a trajectory no longer held."""
        key = (plan.tenant, plan.trajectory_id)
        if key not in self._states:
            return 0
        return self.tokens.prefix(key, plan.step_index, prompt_ids, completion_ids)

    def end(self, tenant: str, trajectory_id: str, now: float) -> int | None:
        """Mark a trajectory ended (history no longer extends it). Returns its step count if known."""
        st = self._state(tenant, trajectory_id, now)
        if st is None:
            return None
        st.ended = True
        return st.next_step

    # ------------------------------------------------------------------ erasure

    def is_erased(self, trajectory_id: str) -> bool:
        return self.digest(trajectory_id) in self._erased

    def _mark_erased(self, trajectory_id: str) -> None:
        d = self.digest(trajectory_id)
        self._erased[d] = None
        self._erased.move_to_end(d)
        while len(self._erased) > ERASED_LIMIT:
            self._erased.popitem(last=False)

    def forget(self, erasure: ErasureEvent) -> int:
        """Drop every state the erasure covers and the links to it; remember the erased ids. Returns how
        many states were dropped."""
        subject = self.digest(erasure.target) if erasure.scope == "subject" else None
        gone: set[tuple[str, str]] = set()
        for key, st in self._states.items():
            if erasure.trajectory_id is not None or erasure.scope == "trajectory":
                hit = erasure.matches(st.trajectory_id, st.tenant, ())
            elif subject is not None:
                hit = (erasure.tenant_scope in (None, st.tenant)) and subject in st.subjects
            else:
                hit = erasure.matches(st.trajectory_id, st.tenant, ())
            if hit:
                gone.add(key)
        for key in gone:
            del self._states[key]
            self.tokens.drop(key)
            self._mark_erased(key[1])
        if erasure.trajectory_id is not None:
            self._mark_erased(erasure.trajectory_id)
        elif erasure.scope == "trajectory":
            self._mark_erased(erasure.target)
        ids = {tid for _, tid in gone}
        for hkey in [k for k, (tid, _) in self._histories.items() if tid in ids]:
            del self._histories[hkey]
        return len(gone)

    # ------------------------------------------------------------------ restarts

    def journal_fields(self, tenant: str, trajectory_id: str) -> tuple[list[list[object]], str | None]:
        """A trajectory's settled delta boundaries (``[count, link hex, exact]``) and tools fingerprint:
        what the step journal keeps so that a call after a crash extends the right prefix."""
        st = self._states.get((tenant, trajectory_id))
        if st is None:
            return [], None
        if st.unsettled:
            self._settle(st)
        return [[c, h.hex(), e] for c, h, e in st.boundaries], st.tools_fp

    def snapshot(self, now: float) -> dict[str, Any]:
        """JSON-able state (hashes and keyed digests only: never message text, token ids or subject ids)
        for a restart."""
        self._evict(now)
        for st in self._states.values():
            if st.unsettled:
                self._settle(st)
        return {
            "states": [
                {
                    "tenant": s.tenant,
                    "trajectory_id": s.trajectory_id,
                    "age_s": now - s.last_seen,
                    "next_step": s.next_step,
                    "boundaries": [[c, h.hex(), e] for c, h, e in s.boundaries],
                    "tools_fp": s.tools_fp,
                    **self.tokens.snapshot((s.tenant, s.trajectory_id)),
                    "ended": s.ended,
                    "subjects": sorted(d.hex() for d in s.subjects),
                }
                for s in self._states.values()
            ],
            "histories": [[t, h.hex(), tid, now - ts] for (t, h), (tid, ts) in self._histories.items()],
            "erased": [d.hex() for d in self._erased],
        }

    def restore(self, data: dict[str, Any], now: float) -> None:
        for s in data.get("states", []):
            st = TrajectoryState(
                tenant=s["tenant"],
                trajectory_id=s["trajectory_id"],
                last_seen=now - float(s["age_s"]),
                next_step=int(s["next_step"]),
                boundaries=tuple((int(c), bytes.fromhex(h), str(e)) for c, h, e in s["boundaries"]),
                tools_fp=s.get("tools_fp"),
                ended=bool(s.get("ended", False)),
                subjects=frozenset(bytes.fromhex(d) for d in s.get("subjects", [])),
            )
            self._states[(st.tenant, st.trajectory_id)] = st
            self.tokens.restore((st.tenant, st.trajectory_id), s)
        for tenant, h, tid, age in data.get("histories", []):
            self._histories[(tenant, bytes.fromhex(h))] = (tid, now - float(age))
        for d in data.get("erased", []):
            self._erased[bytes.fromhex(d)] = None
        self._evict(now)
