"""The policy versions one model server holds, with their roles, and which names were ever used.

A version is a mapping from each weight's state-dict name to a tensor. Versions share the tensors they did not
change (an update is laid over its parent and copies nothing else), so holding N versions costs the base
model plus what each update replaced. Roles: the *default* (what a request that picks no version gets),
*candidates* (served only to requests that name them; never evicted, and never made the default except by
a promotion) and *kept* versions (former defaults, rollback targets; the least recently default beyond
``keep`` is evicted). The version the server loaded with (the base) is never evicted and does not count
in ``keep``: it is the rollback of last resort, where an erasure takes a line whose every version
trained on erased data. ``max_versions`` caps everything in memory: a push beyond it is refused.

Decoding a version points every parameter's ``.data`` at that version's tensors (``activate``): no copy,
microseconds per tensor, done by the generate thread before each batch, so a batch is decoded by one
version from its first token to its last. Changes (``apply``, ``discard``) run on the same thread between
batches. Tensors are never written in place (inference only), which is what makes the sharing safe.

Tied weights (SmolLM2's ``lm_head.weight`` is ``model.embed_tokens.weight``) are one slot under two names.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from sluice.events import PolicyRole
from trainers.exceptions import RequestError
from trainers.serving.policy_api import PolicyHistoryEntry, PolicyStatus, PushRole, VersionInfo

log = logging.getLogger("sluice.serve")
MAX_FALLBACK_NAMES = 256  # versions the fallback count tells apart (a flood of made-up names stays bounded)


class VersionConflict(RequestError):
    """409: the change conflicts with the versions held."""


class VersionReused(VersionConflict):
    """409: a version name this server has used before."""


class TooManyVersions(VersionConflict):
    """409: the push would hold more than ``max_versions`` versions."""


class DefaultNotDiscardable(VersionConflict):
    """409: the default version cannot be discarded (promote another first)."""


class VersionNotKept(RequestError):
    """404: a version (rollback, promote, discard target or a push's parent) that is not kept."""


class BadTensors(RequestError):
    """400: names the served model does not have, wrong shapes, or non-float tensors."""


@dataclass(frozen=True)
class Version:
    tensors: dict[str, torch.Tensor]  # canonical name -> tensor (the parent's own where unchanged)
    parent: str | None
    replaced: int
    added_bytes: int
    candidate: bool = False


@dataclass(frozen=True)
class Prepared:
    """A checked change, ready to apply: a new version laid over its parent, or a kept version selected."""

    version: str
    tensors: dict[str, torch.Tensor]
    replaced: int
    action: str  # "update" | "rollback" | "promote"
    role: PushRole = "serve"
    parent: str | None = None
    added_bytes: int = 0
    load_ms: float = 0.0


def _nbytes(tensors: Mapping[str, torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors.values())


class PolicyStore:
    MAX_HISTORY = 1000  # entries of GET /v1/policy's history (the event log keeps everything)

    def __init__(
        self,
        model: torch.nn.Module,
        model_name: str,
        base_version: str = "0",
        keep: int = 3,
        max_versions: int = 8,
    ) -> None:
        self.model_name = model_name
        if max_versions < keep:
            raise ValueError(f"max_versions={max_versions} is below keep={keep}")
        self.keep, self.max_versions = keep, max_versions
        self.base_version = base_version
        self._lock = threading.Lock()
        # version asked for but not held -> requests the default answered instead
        self.fallbacks: Counter[str] = Counter()
        by_id: dict[int, str] = {}
        self._slots: dict[str, torch.Tensor] = {}  # canonical name -> the live Parameter/buffer
        self._alias: dict[str, str] = {}  # every state-dict name -> its canonical name
        for name, slot in model.state_dict(keep_vars=True).items():
            canonical = by_id.setdefault(id(slot), name)
            self._alias[name] = canonical
            if canonical == name:
                self._slots[name] = slot
        base = {name: slot.detach() for name, slot in self._slots.items()}
        # order: candidates by push time among the others by when they were last the default
        self._versions: OrderedDict[str, Version] = OrderedDict({base_version: Version(base, None, 0, 0)})
        self._used: set[str] = {base_version}
        self.serving = base_version  # the default version
        self.active = base_version  # the version the parameters point at now (generate thread)
        self.history: list[PolicyHistoryEntry] = [
            PolicyHistoryEntry(version=base_version, action="load", at=time.time(), role="default")
        ]

    # ----------------------------------------------------------------------------- checks (any thread)

    def prepare_update(
        self,
        version: str,
        tensors: Mapping[str, torch.Tensor],
        role: PushRole = "serve",
        parent: str | None = None,
    ) -> Prepared:
        """Check ``tensors`` against the served model and lay them over ``parent`` (None: the default)."""
        self.check_push(version, role, parent)
        if not tensors:
            raise BadTensors("the update has no tensors")
        unknown = sorted(k for k in tensors if k not in self._alias)
        if unknown:
            raise BadTensors(
                f"unknown tensor names: {', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''}"
            )
        new: dict[str, torch.Tensor] = {}
        for name, tensor in tensors.items():
            canonical = self._alias[name]
            slot = self._slots[canonical]
            if tuple(tensor.shape) != tuple(slot.shape):
                raise BadTensors(
                    f"{name}: shape {list(tensor.shape)}, the served model has {list(slot.shape)}"
                )
            if not tensor.is_floating_point():
                raise BadTensors(f"{name}: dtype {tensor.dtype} is not a floating-point type")
            value = tensor.detach().to(device=slot.device, dtype=slot.dtype)
            if canonical in new and not torch.equal(new[canonical], value):
                raise BadTensors(
                    f"{name} and {canonical} are one tied weight but the update gives them different values"
                )
            new[canonical] = value
        with self._lock:
            parent = self.serving if parent is None else parent
            if parent not in self._versions:
                raise VersionNotKept(f"parent version {parent!r} is not kept here")
            base = self._versions[parent].tensors
        return Prepared(version, {**base, **new}, len(new), "update", role, parent, _nbytes(new))

    def prepare_select(self, version: str, action: str = "promote") -> Prepared:
        """Make a kept version (a candidate or a former default) the default: promote or rollback."""
        with self._lock:
            if version not in self._versions:
                raise VersionNotKept(f"version {version!r} is not kept here (kept: {list(self._versions)})")
            v = self._versions[version]
            return Prepared(version, v.tensors, 0, action, parent=v.parent, added_bytes=v.added_bytes)

    def prepare_rollback(self, version: str) -> Prepared:
        return self.prepare_select(version, "rollback")

    def check_new_name(self, version: str) -> None:
        with self._lock:
            if version in self._used:
                raise VersionReused(
                    f"version {version!r} was used before on this server; names are never reused"
                )

    def check_push(self, version: str, role: PushRole = "serve", parent: str | None = None) -> None:
        """Refuse a push before its tensors are read: a used name, no room, or a parent not kept."""
        self.check_new_name(version)
        with self._lock:
            self._check_room(role)
            if parent is not None and parent not in self._versions:
                raise VersionNotKept(f"parent version {parent!r} is not kept here")

    def _check_room(self, role: PushRole) -> None:
        candidates = sum(v.candidate for v in self._versions.values())
        others = len(self._versions) - candidates
        base = int(self.base_version in self._versions and not self._versions[self.base_version].candidate)
        served = candidates + base + min(self.keep, others - base + 1)
        after = candidates + 1 + others if role == "candidate" else served
        if after > self.max_versions:
            raise TooManyVersions(
                f"this server holds {len(self._versions)} versions (max_versions={self.max_versions}); "
                "discard or promote a candidate first"
            )

    # ----------------------------------------------------------------------------- changes (generate thread)

    def apply(self, prepared: Prepared) -> float:
        """Apply a prepared change; returns the milliseconds the parameters took to point at the new default
        (0 for a candidate). Call between batches only."""
        with self._lock:
            if prepared.action == "update":
                if prepared.version in self._used:
                    raise VersionReused(f"version {prepared.version!r} was used before on this server")
                self._check_room(prepared.role)
                self._used.add(prepared.version)
                self._versions[prepared.version] = Version(
                    prepared.tensors, prepared.parent, prepared.replaced, prepared.added_bytes,
                    candidate=prepared.role == "candidate",
                )  # fmt: skip
            elif prepared.version not in self._versions:
                raise VersionNotKept(f"version {prepared.version!r} is no longer kept here")
            become_default = prepared.action != "update" or prepared.role == "serve"
            if become_default:
                v = self._versions[prepared.version]
                if v.candidate:
                    self._versions[prepared.version] = Version(v.tensors, v.parent, v.replaced, v.added_bytes)
                self._versions.move_to_end(prepared.version)
                self.serving = prepared.version
                self._evict()
        swap_ms = self.activate(prepared.version) if become_default else 0.0
        self._record(prepared.version, prepared.action, swap_ms, prepared.replaced)
        return swap_ms

    def discard(self, version: str) -> None:
        """Remove a version from memory (its name stays used). Call between batches only."""
        with self._lock:
            if version not in self._versions:
                raise VersionNotKept(f"version {version!r} is not kept here (kept: {list(self._versions)})")
            if version == self.serving:
                raise DefaultNotDiscardable(f"version {version!r} is the default; promote another first")
            del self._versions[version]
        if self.active == version:  # let its tensors go now, not at the next batch
            self.activate(self.serving)
        self._record(version, "discard", 0.0, 0)

    def activate(self, version: str) -> float:
        """Point every parameter at ``version``'s tensors; returns the milliseconds it took. Generate thread."""
        if version == self.active:
            return 0.0
        t0 = time.perf_counter()
        with self._lock:
            for name, tensor in self._versions[version].tensors.items():
                self._slots[name].data = tensor
            self.active = version
        return (time.perf_counter() - t0) * 1000

    def resolve(self, asked: str | None) -> str:
        """The version a request gets: the one it asked for when kept, else the default."""
        with self._lock:
            return asked if asked is not None and asked in self._versions else self.serving

    def note_fallback(self, asked: str) -> None:
        """A request named ``asked``, which this server does not hold, and the default answered it."""
        with self._lock:
            first = asked not in self.fallbacks
            if first and len(self.fallbacks) >= MAX_FALLBACK_NAMES:
                return
            self.fallbacks[asked] += 1
        if first:
            log.warning("a request named policy version %r, which is not held here: the default %r answered "
                        "(counted in the status's fallbacks)", asked, self.serving)  # fmt: skip

    def _evict(self) -> None:
        pinned = (self.serving, self.base_version)
        while sum(not v.candidate and n != self.base_version for n, v in self._versions.items()) > self.keep:
            oldest = next(n for n, v in self._versions.items() if not v.candidate and n not in pinned)
            del self._versions[oldest]  # the least recently default; never a candidate

    def _record(self, version: str, action: str, swap_ms: float, tensors: int) -> None:
        with self._lock:
            entry = PolicyHistoryEntry(version=version, action=action, at=time.time(),  # type: ignore[arg-type]
                                       swap_ms=round(swap_ms, 3), tensors=tensors, role=self._role(version))  # fmt: skip
            self.history.append(entry)
            del self.history[: -self.MAX_HISTORY]

    # ----------------------------------------------------------------------------- reads

    def _role(self, version: str) -> PolicyRole | None:
        v = self._versions.get(version)
        if v is None:
            return None
        return "default" if version == self.serving else "candidate" if v.candidate else "kept"

    def role(self, version: str) -> PolicyRole | None:
        with self._lock:
            return self._role(version)

    def info(self, version: str) -> VersionInfo | None:
        with self._lock:
            return self._info(version)

    def _info(self, version: str) -> VersionInfo | None:
        v = self._versions.get(version)
        role = self._role(version)
        if v is None or role is None:
            return None
        return VersionInfo(version=version, role=role, parent=v.parent, tensors=v.replaced,
                           added_bytes=v.added_bytes)  # fmt: skip

    def kept(self) -> list[str]:
        with self._lock:
            return list(self._versions)

    def candidates(self) -> list[str]:
        with self._lock:
            return [n for n, v in self._versions.items() if v.candidate]

    def status(self) -> PolicyStatus:
        with self._lock:
            infos = [self._info(n) for n in self._versions]
            return PolicyStatus(
                model=self.model_name,
                serving_version=self.serving,
                versions=list(self._versions),
                candidates=[n for n, v in self._versions.items() if v.candidate],
                kept=[i for i in infos if i is not None],
                max_versions=self.max_versions,
                history=list(self.history),
                fallbacks=dict(self.fallbacks),
            )
