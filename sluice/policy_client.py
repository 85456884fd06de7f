"""Client of the policy servers' weight API: push new weights (served at once or as a candidate), promote,
roll back, discard, read the versions each server holds and their roles, withdraw tainted versions.

Used by the learner's weight push, the control plane's promotions, an erasure's rollback and discards,
``sluice train rollback VERSION`` and ``sluice status``. Standard library HTTP only (no extra dependency;
torch and safetensors only where a state dict is pushed); one ``PolicyClient`` per server, ``PolicyFleet``
for all configured ones.

    from sluice.policy_client import PolicyClient
    client = PolicyClient("http://127.0.0.1:8788")
    client.push_state_dict(model.state_dict(), version="3")   # raw safetensors over HTTP
    client.push_file("/abs/weights.safetensors", version="4")  # the server reads the file (same machine)
    client.rollback("3"); client.status().serving_version
    client.push_candidate_state_dict(update, version="5", parent="4")  # served only to requests naming it
    client.promote("5"); client.discard("4"); client.status().kept  # each version with its role
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sluice.policy_http import (
    DISCARD_PATH,
    FORGET_PATH,
    PARENT_HEADER,
    POLICY_PATH,
    PROMOTE_PATH,
    ROLE_HEADER,
    ROLLBACK_PATH,
    SAFETENSORS_CONTENT_TYPE,
    VERSION_HEADER,
    WEIGHTS_PATH,
    ForgetReply,
    ForgetRequest,
    PolicyStatus,
    PushRequest,
    PushRole,
    SwapReply,
    VersionInfo,
    VersionRequest,
)

if TYPE_CHECKING:
    import torch


class PolicyClientError(RuntimeError):
    """A policy server refused the call or could not be reached; ``status`` is the HTTP status (0: down)."""

    def __init__(self, url: str, status: int, message: str) -> None:
        super().__init__(f"{url}: {status or 'unreachable'}: {message}")
        self.url, self.status, self.message = url, status, message


class VersionConflict(PolicyClientError):
    """409: the version name was used before on this server (names are never reused), the server holds
    ``max_versions`` already, or a discard named the default version."""


class VersionNotKept(PolicyClientError):
    """404: a promote, rollback, discard or parent naming a version the server does not keep (any more)."""


class BadWeights(PolicyClientError):
    """400: unknown tensor names, wrong shapes, or an unreadable file."""


_ERRORS: dict[int, type[PolicyClientError]] = {409: VersionConflict, 404: VersionNotKept, 400: BadWeights}


def server_root(url: str) -> str:
    """``http://host:port`` from a server URL that may end in ``/v1`` (an OpenAI base URL)."""
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def state_dict_bytes(state_dict: Mapping[str, torch.Tensor]) -> bytes:
    """Safetensors bytes of a state dict (contiguous CPU tensors; a tensor sharing another's storage, as
    tied weights do, is copied)."""
    from safetensors.torch import save

    out, seen = {}, set()
    for name, tensor in state_dict.items():
        t = tensor.detach().to("cpu").contiguous()
        key = t.untyped_storage().data_ptr()
        out[name] = t.clone() if key in seen else t  # tied weights share storage: safetensors wants copies
        seen.add(key)
    return save(out)


class PolicyClient:
    """One policy server (``base_url``: its root or its ``/v1`` OpenAI base URL)."""

    def __init__(self, base_url: str, timeout_s: float = 300.0) -> None:
        self.url = server_root(base_url)
        self.timeout_s = timeout_s

    def _call(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> Any:
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                message = json.loads(raw)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = raw.decode(errors="replace")[:500]
            raise _ERRORS.get(err.code, PolicyClientError)(self.url, err.code, message) from None
        except OSError as err:  # refused, reset, timed out
            raise PolicyClientError(self.url, 0, str(err)) from None

    def _json(self, path: str, model: Any) -> Any:
        body = model.model_dump_json().encode()
        return self._call("POST", path, body, {"content-type": "application/json"})

    def status(self) -> PolicyStatus:
        return PolicyStatus.model_validate(self._call("GET", POLICY_PATH))

    def push_file(
        self, path: str | Path, version: str, role: PushRole = "serve", parent: str | None = None
    ) -> SwapReply:
        """The server reads ``path`` (a safetensors file on its machine) and holds it as ``version``, laid
        over ``parent`` (None: its default); role ``serve`` makes it the default, ``candidate`` does not."""
        req = PushRequest(version=str(version), path=str(Path(path).resolve()), role=role, parent=parent)
        return SwapReply.model_validate(self._json(WEIGHTS_PATH, req))

    def push_bytes(
        self, data: bytes, version: str, role: PushRole = "serve", parent: str | None = None
    ) -> SwapReply:
        """Safetensors bytes sent in the request body."""
        headers = {"content-type": SAFETENSORS_CONTENT_TYPE, VERSION_HEADER: str(version), ROLE_HEADER: role}
        if parent is not None:
            headers[PARENT_HEADER] = str(parent)
        return SwapReply.model_validate(self._call("POST", WEIGHTS_PATH, data, headers))

    def push_state_dict(
        self,
        state_dict: Mapping[str, torch.Tensor],
        version: str,
        role: PushRole = "serve",
        parent: str | None = None,
    ) -> SwapReply:
        """Push tensors named as in the served model's ``state_dict()``; a subset updates just those."""
        return self.push_bytes(state_dict_bytes(state_dict), version, role, parent)

    def push_candidate_file(self, path: str | Path, version: str, parent: str | None = None) -> SwapReply:
        return self.push_file(path, version, "candidate", parent)

    def push_candidate_state_dict(
        self, state_dict: Mapping[str, torch.Tensor], version: str, parent: str | None = None
    ) -> SwapReply:
        return self.push_state_dict(state_dict, version, "candidate", parent)

    def _version_call(self, path: str, version: str) -> SwapReply:
        return SwapReply.model_validate(self._json(path, VersionRequest(version=str(version))))

    def promote(self, version: str) -> SwapReply:
        """Make a kept version (a candidate or a former default) the default."""
        return self._version_call(PROMOTE_PATH, version)

    def rollback(self, version: str) -> SwapReply:
        return self._version_call(ROLLBACK_PATH, version)

    def discard(self, version: str) -> SwapReply:
        """Remove a version from the server's memory (never the default; its name stays used)."""
        return self._version_call(DISCARD_PATH, version)

    def forget(self, conversations: Iterable[str]) -> int:
        """Drop the token history the server remembers for these conversations; how many sequences went."""
        body = ForgetRequest(conversations=sorted(set(conversations)))
        return ForgetReply.model_validate(self._json(FORGET_PATH, body)).forgotten

    def roles(self) -> dict[str, VersionInfo]:
        """Each version the server holds -> its role, parent, tensors replaced and bytes added."""
        return {info.version: info for info in self.status().kept}


@dataclass(frozen=True)
class Withdrawal:
    """What one server did when tainted versions were withdrawn from it."""

    rolled_back: str | None  # "old -> new" when its default was tainted
    discarded: list[str]


def withdraw(
    client: PolicyClient, tainted: set[str], targets: Callable[[str], Iterable[str]] = lambda _: ()
) -> Withdrawal:
    """Take ``tainted`` versions off one server: a tainted default rolls back to the first of
    ``targets(default)`` the server keeps that is not tainted, else to the version it loaded with; then each tainted version it holds
    is discarded. A refused rollback or discard raises ``PolicyClientError`` (a target the server stopped
    keeping in between is passed over, unless it is the last one left)."""
    status = client.status()
    rolled = None
    if status.serving_version in tainted:
        loaded = status.history[0].version if status.history else "0"
        order = list(
            dict.fromkeys(
                [
                    *(
                        v
                        for v in targets(status.serving_version)
                        if v in status.versions and v not in tainted
                    ),
                    loaded,
                ]
            )
        )
        for to in order:
            try:
                client.rollback(to)
            except VersionNotKept:
                if to == order[-1]:
                    raise
                continue
            rolled = f"{status.serving_version} -> {to}"
            break
    gone = [v for v in status.versions if v in tainted]
    for v in gone:
        client.discard(v)
    return Withdrawal(rolled, gone)


@dataclass(frozen=True)
class FleetResult:
    """What each server answered: a reply, or the error it raised."""

    replies: dict[str, SwapReply]
    errors: dict[str, PolicyClientError]

    @property
    def ok(self) -> bool:
        return not self.errors


class PolicyFleet:
    """Every configured policy server; calls go to all of them at once (one thread each)."""

    def __init__(self, urls: Iterable[str], timeout_s: float = 300.0) -> None:
        self.clients = [PolicyClient(u, timeout_s) for u in dict.fromkeys(urls)]

    def _each(self, call: Any) -> FleetResult:
        replies: dict[str, SwapReply] = {}
        errors: dict[str, PolicyClientError] = {}

        def one(client: PolicyClient) -> None:
            try:
                replies[client.url] = call(client)
            except PolicyClientError as err:
                errors[client.url] = err

        with ThreadPoolExecutor(max_workers=max(1, len(self.clients))) as pool:
            list(pool.map(one, self.clients))
        return FleetResult(replies, errors)

    def push_state_dict(
        self,
        state_dict: Mapping[str, torch.Tensor],
        version: str,
        role: PushRole = "serve",
        parent: str | None = None,
    ) -> FleetResult:
        data = state_dict_bytes(state_dict)  # serialised once for every server
        return self.push_bytes(data, version, role, parent)

    def push_bytes(
        self, data: bytes, version: str, role: PushRole = "serve", parent: str | None = None
    ) -> FleetResult:
        return self._each(lambda c: c.push_bytes(data, version, role, parent))

    def push_file(
        self, path: str | Path, version: str, role: PushRole = "serve", parent: str | None = None
    ) -> FleetResult:
        return self._each(lambda c: c.push_file(path, version, role, parent))

    def push_candidate_state_dict(
        self, state_dict: Mapping[str, torch.Tensor], version: str, parent: str | None = None
    ) -> FleetResult:
        return self.push_state_dict(state_dict, version, "candidate", parent)

    def push_candidate_file(self, path: str | Path, version: str, parent: str | None = None) -> FleetResult:
        return self.push_file(path, version, "candidate", parent)

    def promote(self, version: str) -> FleetResult:
        return self._each(lambda c: c.promote(version))

    def rollback(self, version: str) -> FleetResult:
        return self._each(lambda c: c.rollback(version))

    def discard(self, version: str) -> FleetResult:
        return self._each(lambda c: c.discard(version))

    def status(self) -> dict[str, PolicyStatus | PolicyClientError]:
        out: dict[str, PolicyStatus | PolicyClientError] = {}
        for client in self.clients:
            try:
                out[client.url] = client.status()
            except PolicyClientError as err:
                out[client.url] = err
        return out
