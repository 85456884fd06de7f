"""The learner's weight push: publish a new policy version to every configured policy server over HTTP.

Transport per server: a safetensors file under ``<output_dir>/push/`` whose path the server reads (same
machine: no 0.5 GB request body for a full 135M model), or the bytes in the request body (another machine);
``auto`` picks the file for loopback servers. Only the tensors the learner trains are sent (every parameter
for a full fine-tune, the merged adapted matrices for LoRA); the server replaces those on top of what it
serves. A server that is down or refuses a push is counted and logged, never fatal: training goes on
and the next push brings it up to date (a push carries full tensors, not deltas).

A push as a *candidate* (``trainer.promotion: gated``) changes nothing any request gets until the control
plane promotes it; the server lays it over its parent version and serves it only to requests naming it.

At start, ``align`` makes the servers serve the learner's weights under one version name: nothing to do
when they already serve the learner's version, a rollback when they keep it, else a push under the next
unused integer name (names are never reused).

    from trainers.live.weight_push import WeightPush
    push = WeightPush(["http://127.0.0.1:8788"], "auto", 120, Path("var/trainer/push"))
    outcome = push.publish(tensors, "3")
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import urlparse

import torch
from pydantic import BaseModel, Field

from sluice.policy_client import PolicyClientError, PolicyFleet, PolicyStatus, withdraw

log = logging.getLogger("sluice.trainer.push")
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class PushOutcome(BaseModel):
    version: str
    push_s: float = 0.0
    pushed: int = Field(0, description="Servers now serving this version.")
    errors: dict[str, str] = Field(default_factory=dict, description="server -> why the push failed.")
    swap_ms_max: float = 0.0
    tensors: int = 0


def _int_versions(status: PolicyStatus) -> list[int]:
    names = [*status.versions, status.serving_version, *(h.version for h in status.history)]
    return [int(v) for v in names if v.isdigit()]


class WeightPush:
    def __init__(
        self, urls: list[str], transport: str, timeout_s: float, push_dir: Path, keep_files: int = 2
    ) -> None:
        def local(url: str) -> bool:
            return transport == "file" or (transport == "auto" and urlparse(url).hostname in LOOPBACK)

        self.file_fleet = PolicyFleet([u for u in urls if local(u)], timeout_s)
        self.bytes_fleet = PolicyFleet([u for u in urls if not local(u)], timeout_s)
        self.push_dir, self.keep_files = push_dir, keep_files
        self.serving: dict[str, str] = {}  # server -> version it serves, as last seen

    @property
    def urls(self) -> list[str]:
        return [c.url for c in (*self.file_fleet.clients, *self.bytes_fleet.clients)]

    def publish(
        self,
        tensors: Mapping[str, torch.Tensor],
        version: str,
        role: str = "serve",
        parent: str | None = None,
    ) -> PushOutcome:
        """``role`` serve: every request gets it now; candidate: kept beside the default, laid over
        ``parent``, for the requests that ask for it by name (a canary's arm, a gate's evaluation)."""
        t0 = time.perf_counter()
        out = PushOutcome(version=version, tensors=len(tensors))
        results = []
        if self.file_fleet.clients:
            path = self.write_file(tensors, version)
            results.append(self.file_fleet.push_file(path, version, role=role, parent=parent))
        if self.bytes_fleet.clients:
            results.append(self.bytes_fleet.push_state_dict(tensors, version, role=role, parent=parent))
        for res in results:
            for url, reply in res.replies.items():
                if role == "serve":
                    self.serving[url] = reply.serving_version
                out.pushed += 1
                out.swap_ms_max = max(out.swap_ms_max, reply.swap_ms)
            for url, err in res.errors.items():
                out.errors[url] = str(err)
                log.warning("weight push of v%s to %s failed: %s", version, url, err)
        out.push_s = time.perf_counter() - t0
        return out

    def discard(self, version: str) -> int:
        """Take a version off every server (one a server no longer holds counts as gone); returns how many
        servers still hold it after the call."""
        held = 0
        for fleet in (self.file_fleet, self.bytes_fleet):
            for url, err in fleet.discard(version).errors.items():
                if err.status != 404:
                    held += 1
                    log.warning("discarding v%s on %s failed: %s", version, url, err)
        return held

    def withdraw(self, versions: list[str], fallbacks: list[str]) -> dict[str, list[str]]:
        """Take ``versions`` (an erasure tainted them) off every server and off disk: a server whose default
        is one of them goes back to the first of ``fallbacks`` it holds, then every one is discarded and
        its pushed file deleted. What the erasure itself found was already withdrawn; this covers a version
        the trainer published after the erasure read the ledger. Returns what stayed on a server, the
        rollbacks and the files deleted."""
        rolled: list[str] = []
        held: set[str] = set()
        for client in (*self.file_fleet.clients, *self.bytes_fleet.clients):
            try:
                done = withdraw(client, set(versions), lambda _: fallbacks)
                held.update(v for v in client.status().versions if v in versions)  # one read: what is left
            except PolicyClientError as err:  # an unreachable server may still hold every one of them
                log.warning("withdrawing %s from %s failed: %s", versions, client.url, err)
                held.update(versions)
                continue
            if done.rolled_back:
                rolled.append(f"{client.url} {done.rolled_back}")
        files = [f for v in versions for f in self.push_dir.glob(f"policy-v{v}.*")]
        for f in files:
            f.unlink(missing_ok=True)
        return {
            "held": [v for v in versions if v in held],
            "rolled_back": rolled,
            "files_deleted": [str(f) for f in files],
        }

    def write_file(self, tensors: Mapping[str, torch.Tensor], version: str) -> Path:
        from safetensors.torch import save_file

        self.push_dir.mkdir(parents=True, exist_ok=True)
        final = self.push_dir / f"policy-v{version}.safetensors"
        tmp = final.with_suffix(".tmp")
        save_file({k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}, str(tmp))
        tmp.rename(final)
        files = sorted(self.push_dir.glob("policy-v*.safetensors"), key=lambda p: p.stat().st_mtime)
        for old in files[: -self.keep_files]:
            old.unlink(missing_ok=True)
        return final

    def statuses(self) -> dict[str, PolicyStatus | PolicyClientError]:
        return {**self.file_fleet.status(), **self.bytes_fleet.status()}

    def align(
        self, version: int, tensors: Callable[[], Mapping[str, torch.Tensor]], role: str = "serve"
    ) -> int:
        """Make every reachable server serve the learner's weights (``role`` candidate: hold them, for the
        gates to prove, when the servers serve other weights); returns the version name they are under
        (the learner's, or the next unused integer when a server already used that name for other weights)."""
        statuses = {u: s for u, s in self.statuses().items() if isinstance(s, PolicyStatus)}
        for url, s in statuses.items():
            self.serving[url] = s.serving_version
        behind = {u: s for u, s in statuses.items() if s.serving_version != str(version)}
        if not behind:
            return version
        used = max((v for s in statuses.values() for v in _int_versions(s)), default=-1)
        if role == "serve" and all(str(version) in s.versions for s in behind.values()):
            for fleet in (self.file_fleet, self.bytes_fleet):
                for client in fleet.clients:
                    if client.url in behind:
                        self.serving[client.url] = client.rollback(str(version)).serving_version
            return version
        target = version if version > used else used + 1
        if role != "serve" and all(str(version) in s.versions for s in behind.values()):
            return version  # already held as a candidate
        outcome = self.publish(tensors(), str(target), role=role)
        log.info(
            "policy servers aligned on v%d (%d pushed, errors %s)", target, outcome.pushed, outcome.errors
        )
        return target
