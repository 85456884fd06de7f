"""The policy versions one model server holds: which serves now, which are kept for rollback, which names
were ever used.

A version is a mapping from each weight's state-dict name to a tensor. Versions share the tensors they did not
change (a partial update copies nothing else), so keeping N versions costs the base model plus what each
update replaced. Serving a version points every parameter's ``.data`` at that version's tensors: no copy,
microseconds per tensor, done by the generate thread between batches (``GenerateEngine.between_batches``),
so a request is decoded by one version from its first token to its last. Tensors are never written in
place (inference only), which is what makes the sharing safe.

Tied weights (SmolLM2's ``lm_head.weight`` is ``model.embed_tokens.weight``) are one slot under two names.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from trainers.exceptions import RequestError
from trainers.serving.policy_api import PolicyHistoryEntry, PolicyStatus


class VersionReused(RequestError):
    """409: a version name this server has used before."""


class VersionNotKept(RequestError):
    """404: a rollback target that is not (or no longer) kept."""


class BadTensors(RequestError):
    """400: names the served model does not have, wrong shapes, or non-float tensors."""


@dataclass(frozen=True)
class Prepared:
    """A checked version, ready to serve: the full name -> tensor map and how many tensors it replaced."""

    version: str
    tensors: dict[str, torch.Tensor]
    replaced: int
    action: str  # "update" | "rollback"
    load_ms: float = 0.0


class PolicyStore:
    MAX_HISTORY = 1000  # entries of GET /v1/policy's history (the event log keeps everything)

    def __init__(
        self, model: torch.nn.Module, model_name: str, base_version: str = "0", keep: int = 3
    ) -> None:
        self.model_name = model_name
        self.keep = keep
        self._lock = threading.Lock()
        by_id: dict[int, str] = {}
        self._slots: dict[str, torch.Tensor] = {}  # canonical name -> the live Parameter/buffer
        self._alias: dict[str, str] = {}  # every state-dict name -> its canonical name
        for name, slot in model.state_dict(keep_vars=True).items():
            canonical = by_id.setdefault(id(slot), name)
            self._alias[name] = canonical
            if canonical == name:
                self._slots[name] = slot
        base = {name: slot.detach() for name, slot in self._slots.items()}
        self._versions: OrderedDict[str, dict[str, torch.Tensor]] = OrderedDict({base_version: base})
        self._used: set[str] = {base_version}
        self.serving = base_version
        self.history: list[PolicyHistoryEntry] = [
            PolicyHistoryEntry(version=base_version, action="load", at=time.time())
        ]

    # ----------------------------------------------------------------------------- checks (any thread)

    def prepare_update(self, version: str, tensors: Mapping[str, torch.Tensor]) -> Prepared:
        """Check ``tensors`` against the served model and lay them over the serving version."""
        self.check_new_name(version)
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
            base = self._versions[self.serving]
        return Prepared(version, {**base, **new}, len(new), "update")

    def prepare_rollback(self, version: str) -> Prepared:
        with self._lock:
            if version not in self._versions:
                raise VersionNotKept(f"version {version!r} is not kept here (kept: {list(self._versions)})")
            return Prepared(version, self._versions[version], 0, "rollback")

    def check_new_name(self, version: str) -> None:
        with self._lock:
            if version in self._used:
                raise VersionReused(
                    f"version {version!r} was used before on this server; names are never reused"
                )

    # ----------------------------------------------------------------------------- swap (generate thread)

    def apply(self, prepared: Prepared) -> float:
        """Serve ``prepared`` now; returns the milliseconds the swap took. Call between batches only."""
        t0 = time.perf_counter()
        with self._lock:
            if prepared.action == "update" and prepared.version in self._used:
                raise VersionReused(f"version {prepared.version!r} was used before on this server")
            for name, tensor in prepared.tensors.items():
                self._slots[name].data = tensor
            swap_ms = (time.perf_counter() - t0) * 1000
            self._used.add(prepared.version)
            self._versions[prepared.version] = prepared.tensors
            self._versions.move_to_end(prepared.version)
            self.serving = prepared.version
            while len(self._versions) > self.keep:
                oldest = next(iter(self._versions))
                del self._versions[oldest]  # never the serving one: it was just moved to the end
            self.history.append(
                PolicyHistoryEntry(
                    version=prepared.version,
                    action=prepared.action,
                    at=time.time(),
                    swap_ms=round(swap_ms, 3),
                    tensors=prepared.replaced,
                )  # fmt: skip
            )
            del self.history[: -self.MAX_HISTORY]
        return swap_ms

    # ----------------------------------------------------------------------------- reads

    def kept(self) -> list[str]:
        with self._lock:
            return list(self._versions)

    def status(self) -> PolicyStatus:
        with self._lock:
            return PolicyStatus(
                model=self.model_name,
                serving_version=self.serving,
                versions=list(self._versions),
                history=list(self.history),
            )
