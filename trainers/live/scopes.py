"""One learner, several learning scopes: the pooled (``shared``) policy and each tenant's own.

A scope owns everything that makes a version line: its trainable weights, its optimizer (and so its
Adam moments), its version number, the version its weights descend from (``parent``), the candidates it
published that the gates have not decided, and copies of its weights at those versions and at the one
the gates promoted. The model's parameters hold one scope's weights at a time: ``ScopeBank.activate``
copies the active scope's weights out and the next one's in (the same Parameter objects, so each
scope's optimizer keeps pointing at them). With LoRA the copied weights are the adapters only (a few MB);
a full fine-tune copies the whole model, so each extra scope costs about three model copies (weights and
two Adam moments).

``settle_candidates`` (pure) decides what the servers' state means for a scope's published candidates: the
newest gone means the gates turned its line down (start again from the newest version still kept: the
promoted one, else the base); older ones gone while the newest stays were only superseded and set aside.

Isolation is enforced here, not only in routing: the driver hands a scope only its own tenants' rows, and
``train`` refuses a row whose tenant belongs to another scope.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from sluice.evolution import SHARED_SCOPE, parse_policy_version, policy_version_name

MAX_SNAPSHOTS = 6  # copies of a line's versions held for going back (a rejected candidate, an erasure)


@dataclass
class ScopeState:
    name: str
    version: int
    weights: dict[str, torch.Tensor]
    opt: torch.optim.Optimizer
    parent: str
    updates: int = 0
    resets: int = 0
    pending: list[str] = field(default_factory=list)  # candidates published, not yet decided
    snapshots: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)  # version -> weights
    routed: list[str] = field(default_factory=list)  # direct candidates on the servers, oldest first

    def version_name(self, number: int | None = None) -> str:
        return policy_version_name(self.name, self.version if number is None else number)


@dataclass(frozen=True)
class Settlement:
    """What the servers said about a scope's candidates: ``gone`` left every server; ``reset_to`` is the
    version training starts again from when the line was turned down (None: go on as it is)."""

    pending: list[str]
    gone: list[str]
    reset_to: str | None = None


def settle_candidates(pending: list[str], kept: set[str], line: list[str], base: str) -> Settlement:
    """``pending``: the scope's published candidates, oldest first; ``kept``: every version some server
    still holds; ``line``: the versions the scope has weights for. The newest candidate gone means the gates
    refused it or an ancestor (the control plane discards a turned-down line whole): start again from the
    newest of ``line`` still kept, a promoted version included, else ``base``. Older candidates gone while
    the newest is kept were superseded and set aside as stale: the newest descends from them and goes on."""
    gone = [v for v in pending if v not in kept]
    if not gone:
        return Settlement(list(pending), [])
    still = [v for v in pending if v in kept]
    if pending[-1] in kept:
        return Settlement(still, gone)
    target = max((v for v in line if v in kept and v not in gone), key=_number, default=base)
    return Settlement([], gone, target)


def _number(name: str) -> int:
    parsed = parse_policy_version(name)
    return parsed[1] if parsed else -1


class ScopeBank:
    """The scopes of one learner and which of them the model's parameters hold now."""

    def __init__(
        self,
        model: torch.nn.Module,
        make_opt: Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer],
        shared_opt: torch.optim.Optimizer,
        shared_version: int,
    ) -> None:
        self.model, self.make_opt = model, make_opt
        self.params = {n: p for n, p in model.named_parameters() if p.requires_grad}
        self.base = self.copy()  # the weights every own scope starts from (the served base line)
        self.base_name = policy_version_name(SHARED_SCOPE, shared_version)
        shared = ScopeState(SHARED_SCOPE, shared_version, self.copy(), shared_opt, self.base_name)
        shared.snapshots[self.base_name] = self.base
        self.scopes: dict[str, ScopeState] = {SHARED_SCOPE: shared}
        self.active = SHARED_SCOPE

    @torch.no_grad()
    def copy(self) -> dict[str, torch.Tensor]:
        return {n: p.detach().clone() for n, p in self.params.items()}

    def get(self, name: str) -> ScopeState:
        """The scope, made on first use: an own scope starts from the base, at version 0 of its line."""
        scope = self.scopes.get(name)
        if scope is None:
            weights = {n: t.clone() for n, t in self.base.items()}
            scope = ScopeState(name, 0, weights, self.make_opt(list(self.params.values())), self.base_name)
            scope.snapshots[self.base_name] = self.base
            self.scopes[name] = scope
        return scope

    @torch.no_grad()
    def activate(self, name: str) -> ScopeState:
        """Put the scope's weights into the model (saving the active scope's first); returns it."""
        scope = self.get(name)
        if name != self.active:
            current = self.scopes[self.active]
            for n, p in self.params.items():
                current.weights[n].copy_(p)
                p.copy_(scope.weights[n])
            self.active = name
        return scope

    @torch.no_grad()
    def load(self, scope: ScopeState, weights: dict[str, torch.Tensor]) -> None:
        """Set a scope's weights (and the model's, when it is the active one)."""
        for n, t in weights.items():
            scope.weights[n].copy_(t)
            if self.active == scope.name:
                self.params[n].copy_(t)

    def snapshot(self, scope: ScopeState) -> None:
        """Keep the scope's weights as they are now, under its current version's name."""
        if self.active == scope.name:
            scope.snapshots[scope.version_name()] = self.copy()
        else:
            scope.snapshots[scope.version_name()] = {n: t.clone() for n, t in scope.weights.items()}

    def prune(self, scope: ScopeState, keep: int = MAX_SNAPSHOTS) -> None:
        """Hold at most ``keep`` copies of a line's versions: never the base, the current parent or a
        candidate the gates have not decided (a full fine-tune's copy is a whole model)."""
        needed = {self.base_name, scope.parent, *scope.pending}
        spare = [v for v in scope.snapshots if v not in needed]
        while len(scope.snapshots) > keep and spare:
            del scope.snapshots[spare.pop(0)]
