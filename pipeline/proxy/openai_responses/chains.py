"""OpenAI responses: what each served response added, per tenant, for ``previous_response_id``.

Each response the proxy serves (with ``store`` not false) leaves one link: the chat messages it added (its
input items, without ``instructions``, which the Responses API never carries over, and its reply; kept as
compact JSON, so nothing a caller does with an expanded history changes what is kept), the
response it continued, its trajectory and the keyed digests of the data subjects named on the way. A call
naming ``previous_response_id`` gets the whole conversation back by walking the links up to the root,
and the proxy sends it to the chat backend in front of the new input.

- **Per tenant.** Links are keyed by ``(tenant, response id)``: an id of another tenant is simply not
  found (the same 400 as an unknown one), so a tenant can neither continue nor probe another's response.
- **Bounded.** At most ``max_responses`` links and ``max_bytes`` of message JSON over all tenants, each
  kept ``ttl_s`` after its last use (serving a continuation uses every link of its chain, so a live
  conversation never expires from its root). The least recently used link goes first, together with
  every link continuing it (a chain with a gap could not be expanded, so its tail is dropped at once).
- **In memory only.** The links hold raw conversation text, so they are never written anywhere: not to
  the spool, not to ``links.json``, not to Kafka (the steps recorded are the normal step events, which
  the pipeline redacts). The trade-off: a restart of the proxy forgets every chain, and a continuation
  of a response served before it gets ``previous_response_not_found`` (the agent re-sends the full
  input, as with ``store: false``); with several proxy replicas, a continuation must reach the replica
  that served the response (route by the response id or the session).
- **Erasure.** ``forget`` drops every link of a trajectory the erasure covers (by trajectory, tenant,
  or a subject named on any link of that trajectory) and every link continuing one of them.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pipeline.proxy.config import ResponseChainConfig
from sluice.events import ErasureEvent

Key = tuple[str, str]  # (tenant, response id)


@dataclass(slots=True)
class ChainLink:
    tenant: str
    trajectory_id: str
    parent: str | None  # the response this one continued
    messages: bytes  # JSON of the chat messages it added (its input items, then its reply): immutable
    subjects: frozenset[bytes]  # keyed digests of the subject ids named on it and its ancestors
    last_used: float


@dataclass(frozen=True, slots=True)
class ChainHistory:
    """The conversation up to and including a response, as chat messages, and the trajectory it is in."""

    messages: list[dict]
    trajectory_id: str
    subjects: frozenset[bytes]


def encode_messages(messages: Iterable[dict]) -> bytes:
    """How a link keeps its messages (and what counts against ``max_bytes``): compact JSON."""
    return json.dumps(list(messages), ensure_ascii=False, separators=(",", ":")).encode()


def message_bytes(messages: Iterable[dict]) -> int:
    return len(encode_messages(messages))


class ResponseChains:
    def __init__(self, config: ResponseChainConfig, digest: Callable[[str], bytes]) -> None:
        self.config = config
        self.digest = digest  # keyed digest of a subject id (the linker's), so raw subject ids are not kept
        self._links: OrderedDict[Key, ChainLink] = OrderedDict()
        self._children: dict[Key, set[str]] = {}
        self.total_bytes = 0

    def __len__(self) -> int:
        return len(self._links)

    # ------------------------------------------------------------------ reads

    def history(self, tenant: str, response_id: str, now: float) -> ChainHistory | None:
        """The whole conversation up to ``response_id`` (oldest first); None if the id is unknown to this
        tenant, expired, or its chain has a gap. Marks every link of the chain used."""
        self._expire(now)
        chain: list[tuple[Key, ChainLink]] = []
        rid: str | None = response_id
        while rid is not None:
            key = (tenant, rid)
            link = self._links.get(key)
            if link is None or len(chain) > len(self._links):
                return None
            chain.append((key, link))
            rid = link.parent
        for key, link in reversed(chain):  # the root ends up least recent of the chain, the tip most
            link.last_used = now
            self._links.move_to_end(key)
        messages = [m for _, link in reversed(chain) for m in json.loads(link.messages)]
        tip = chain[0][1]
        return ChainHistory(messages, tip.trajectory_id, tip.subjects)

    # ------------------------------------------------------------------ writes

    def put(
        self,
        tenant: str,
        response_id: str,
        parent: str | None,
        messages: list[dict],
        trajectory_id: str,
        subject_ids: Iterable[str],
        now: float,
    ) -> bool:
        """Keep a served response; False when chains are off or it alone is larger than ``max_bytes``."""
        cfg = self.config
        data = encode_messages(messages)
        if cfg.max_responses == 0 or len(data) > cfg.max_bytes:
            return False
        key = (tenant, response_id)
        if key in self._links:
            self._drop(key)
        subjects = frozenset(self.digest(s) for s in subject_ids)
        if parent is not None:
            up = self._links.get((tenant, parent))
            if up is None:
                parent = None  # evicted meanwhile: this response starts its own chain
            else:
                subjects |= up.subjects
                self._children.setdefault((tenant, parent), set()).add(response_id)
        self._links[key] = ChainLink(tenant, trajectory_id, parent, data, subjects, now)
        self.total_bytes += len(data)
        self._expire(now)
        while self._links and (len(self._links) > cfg.max_responses or self.total_bytes > cfg.max_bytes):
            self._drop(next(iter(self._links)))
        return key in self._links

    def _expire(self, now: float) -> None:
        ttl = self.config.ttl_s
        while self._links:
            key, link = next(iter(self._links.items()))
            if now - link.last_used <= ttl:
                return
            self._drop(key)

    def _drop(self, key: Key) -> int:
        """Remove a link and every link continuing it; returns how many were removed."""
        dropped = 0
        stack = [key]
        while stack:
            k = stack.pop()
            link = self._links.pop(k, None)
            if link is None:
                continue
            dropped += 1
            self.total_bytes -= len(link.messages)
            if link.parent is not None:
                siblings = self._children.get((k[0], link.parent))
                if siblings is not None:
                    siblings.discard(k[1])
                    if not siblings:
                        del self._children[(k[0], link.parent)]
            stack += [(k[0], child) for child in self._children.pop(k, ())]
        return dropped

    # ------------------------------------------------------------------ erasure

    def forget(self, erasure: ErasureEvent) -> int:
        """Drop every link of each trajectory the erasure covers, and their continuations. Returns how
        many links were dropped."""
        subject = self.digest(erasure.target) if erasure.scope == "subject" else None
        hit: set[Key] = set()  # (tenant, trajectory id)
        for link in self._links.values():
            if erasure.trajectory_id is None and subject is not None:
                covered = erasure.tenant_scope in (None, link.tenant) and subject in link.subjects
            else:
                covered = erasure.matches(link.trajectory_id, link.tenant, ())
            if covered:
                hit.add((link.tenant, link.trajectory_id))
        gone = [k for k, link in self._links.items() if (link.tenant, link.trajectory_id) in hit]
        return sum(self._drop(k) for k in gone)
