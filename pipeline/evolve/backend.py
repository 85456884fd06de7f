"""Ask the configured OpenAI-compatible backend for chat answers, off the request path.

The shadow evaluation and the offline regression send the same prompts twice (control, candidate) to
the backend the proxy would have used; nothing here goes through the proxy, so nothing is recorded as
traffic. The backend's key is read from its config and only ever placed in the Authorization header.
Each call is idempotent (the same body asked again), so a connection-level failure or a 502/503/504 is
tried again (``evolve.eval.http``); ``EvalBackendError`` carries how many tries were made.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pipeline.evolve.http_calls import CallFailed, open_client, post_json
from pipeline.evolve.loop_config import EvalBackendConfig
from pipeline.proxy.config import BackendConfig, ProxyConfig
from sluice.events import POLICY_VERSION_HEADER


class EvalBackendError(RuntimeError):
    """The backend could not be reached or answered with an error, after ``attempts`` tries."""

    def __init__(self, message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


def pick_backend(proxy: ProxyConfig, cfg: EvalBackendConfig, model: str) -> BackendConfig:
    if cfg.backend is not None:
        found = next((b for b in proxy.backends if b.name == cfg.backend), None)
        if found is None:
            raise EvalBackendError(f"evolve.eval.backend={cfg.backend!r} names no proxy backend")
        return found
    found = proxy.backend_for(model)
    if found is None:
        raise EvalBackendError(f"no proxy backend serves model {model!r}")
    return found


def reply_text(message: dict[str, Any]) -> str:
    """What a grader reads from an assistant message: its text, else its tool calls as name(arguments)."""
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    text = content or ""
    calls = message.get("tool_calls") or []
    if not text and calls:
        text = "\n".join(
            f"{(c.get('function') or {}).get('name', '')}({(c.get('function') or {}).get('arguments', '')})"
            for c in calls
            if isinstance(c, dict)
        )
    return text


class EvalClient:
    """Sends chat bodies to one backend; ``answer_all`` runs ``concurrency`` at once."""

    def __init__(self, proxy: ProxyConfig, cfg: EvalBackendConfig) -> None:
        self._proxy, self._cfg = proxy, cfg
        self._http = open_client(cfg.timeout_s, cfg.http)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> EvalClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def prepare(self, body: dict[str, Any], temperature: float | None = None) -> dict[str, Any]:
        """The body as sent: the configured model and sampling (``temperature`` overrides the configured
        one), never streaming."""
        out = {k: v for k, v in body.items() if k not in ("stream", "stream_options", "n")}
        if self._cfg.model is not None:
            out["model"] = self._cfg.model
        out.setdefault("max_tokens", self._cfg.max_tokens)
        out["temperature"] = self._cfg.temperature if temperature is None else temperature
        return out

    def answer(
        self, body: dict[str, Any], temperature: float | None = None, policy: str | None = None
    ) -> dict[str, Any]:
        """The first choice's assistant message; ``policy`` asks the model server for that policy version."""
        sent = self.prepare(body, temperature)
        backend = pick_backend(self._proxy, self._cfg, str(sent.get("model", "")))
        headers = {"content-type": "application/json"}
        if policy is not None:
            headers[POLICY_VERSION_HEADER] = policy
        key = backend.credential()
        if key:
            headers["authorization"] = f"Bearer {key}"
        url = f"{backend.base_url}/chat/completions"
        try:
            resp, tries = post_json(self._http, url, sent, headers, self._cfg.http)
        except CallFailed as err:
            raise EvalBackendError(f"backend {backend.name}: {err}", err.attempts) from None
        if resp.status_code >= 400:
            raise EvalBackendError(
                f"backend {backend.name} answered {resp.status_code}: {resp.text[:200]}", tries
            )
        choices = resp.json().get("choices") or []
        if not choices:
            raise EvalBackendError(f"backend {backend.name} answered no choices")
        return choices[0].get("message") or {}

    def answer_all(
        self,
        bodies: list[dict[str, Any]],
        temperature: float | None = None,
        policies: list[str | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Every body answered; ``policies[i]`` the policy version body i asks for (None: the default)."""
        asked = policies if policies is not None else [None] * len(bodies)
        with ThreadPoolExecutor(max_workers=self._cfg.concurrency) as pool:
            return list(pool.map(lambda b, v: self.answer(b, temperature, v), bodies, asked))
