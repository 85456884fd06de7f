"""A small, fast, real OpenAI-compatible backend for tests and benchmarks: deterministic replies.

    python -m infra.echo_backend --port 8788 [--chunk-delay-ms 5] [--api-key KEY]

Serves ``POST /v1/chat/completions`` (streaming and not, n > 1, tool calls when ``tool_choice`` asks for
one: ``required``/``any`` or a named function), ``POST /v1/completions``, ``GET /v1/models``, and
``POST /v1/embeddings``, vLLM's ``POST /tokenize``, ``GET /v1/models/{id}`` and a reflection of any other call below ``/v1``
(``echo_extras``). The reply is
``"Echo: <last user text>"`` (``"Echo[i]: ..."`` for choice i > 0). Like vLLM, ``return_token_ids: true``
adds ``prompt_token_ids`` (chat: top level, first chunk only when streaming; completions: per choice) and
per-choice ``token_ids``; ``logprobs`` gives per-token logprobs. Its "tokenizer" is UTF-8 bytes over a
prefix-stable chat template, so turn t+1's prompt tokens start with turn t's prompt + completion tokens.
A model named ``error-<status>`` answers that HTTP status in OpenAI's error format (for error-path tests).

Departure from a real server: it is a raw ASGI app (no framework) so that it never is the bottleneck of a
benchmark; it does not model time except the optional artificial delays.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import time
from typing import Any

from infra import echo_extras
from infra.echo_reply import Reply, content_text, pieces, render_prompt, token_logprob, tokenize


class EchoBackend:
    """The ASGI app."""

    def __init__(
        self, models: list[str], chunk_delay_s: float = 0.0, delay_s: float = 0.0, api_key: str | None = None
    ):
        self.models = models
        self.chunk_delay_s = chunk_delay_s
        self.delay_s = delay_s
        self.api_key = api_key

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path, method = scope["path"], scope["method"]
        if self.api_key is not None:
            auth = dict(scope["headers"]).get(b"authorization", b"").decode()
            if auth != f"Bearer {self.api_key}":
                return await self._json(send, 401, _error("invalid upstream api key", "authentication_error"))
        if method == "GET" and path in ("/v1/models", "/models"):
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "echo"} for m in self.models]
            return await self._json(send, 200, {"object": "list", "data": data})
        if method == "GET" and path == "/health":
            return await self._json(send, 200, {"status": "ok"})
        if method == "GET" and path.startswith("/v1/models/"):
            return await self._json(send, *echo_extras.model_card(self.models, path[len("/v1/models/") :]))
        if method == "POST" and path == "/tokenize":  # vLLM's, at the server root
            raw = await self._body(receive)
            return await self._json(send, *echo_extras.tokenize(json.loads(raw or b"{}")))
        if not path.startswith("/v1/"):
            return await self._json(send, 404, _error(f"no route {method} {path}", "not_found_error"))
        raw = await self._body(receive)
        if method != "POST" or path not in ("/v1/chat/completions", "/v1/completions", "/v1/embeddings"):
            return await self._reflect(scope, raw, send)
        try:
            body = json.loads(raw)
            model = str(body["model"])
        except (ValueError, KeyError, TypeError):
            return await self._json(
                send, 400, _error("body must be JSON with a model", "invalid_request_error")
            )
        if model.startswith("error-"):
            status = int(model.split("-", 1)[1])
            return await self._json(
                send, status, _error(f"echo backend error {status}", "upstream_test_error")
            )
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if path == "/v1/embeddings":
            return await self._json(send, *echo_extras.embeddings(body))
        if path == "/v1/chat/completions":
            return await self._chat(body, send)
        return await self._completions(body, send)

    # ------------------------------------------------------------------ chat

    async def _chat(self, body: dict[str, Any], send: Any) -> None:
        messages = body.get("messages") or []
        hint = next(
            (content_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), ""
        )
        prompt_ids = tokenize(render_prompt(messages))
        replies = [Reply(body, i, hint) for i in range(int(body.get("n") or 1))]
        rid = "chatcmpl-" + hashlib.sha1(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:24]
        want_ids, want_lp = bool(body.get("return_token_ids")), bool(body.get("logprobs"))
        usage = {
            "prompt_tokens": len(prompt_ids),
            "completion_tokens": sum(len(r.token_ids) for r in replies),
            "total_tokens": len(prompt_ids) + sum(len(r.token_ids) for r in replies),
        }
        head = {
            "id": rid,
            "created": int(time.time()),
            "model": body["model"],
            "system_fingerprint": "echo-1",
        }
        if not body.get("stream"):
            choices = []
            for r in replies:
                msg: dict[str, Any] = {"role": "assistant", "content": r.content, "refusal": None}
                msg["tool_calls"] = r.tool_calls
                c: dict[str, Any] = {
                    "index": r.index,
                    "message": msg,
                    "logprobs": r.logprobs() if want_lp else None,
                }
                c["finish_reason"] = r.finish
                if want_ids:
                    c["token_ids"] = r.token_ids
                choices.append(c)
            out = {**head, "object": "chat.completion", "choices": choices, "usage": usage}
            if want_ids:
                out["prompt_token_ids"] = prompt_ids
            return await self._json(send, 200, out)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        await self._start_sse(send)
        head = {**head, "object": "chat.completion.chunk"}
        if include_usage:
            head["usage"] = None
        first = True
        for r in replies:
            role = {
                **head,
                "choices": [
                    {
                        "index": r.index,
                        "delta": {"role": "assistant", "content": ""},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                ],
            }
            if want_ids and first:
                role["prompt_token_ids"] = prompt_ids
            first = False
            await self._event(send, role)
            pos = 0
            deltas: list[dict[str, Any]] = []
            if r.tool_calls:
                tc = r.tool_calls[0]
                deltas.append(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": tc["id"],
                                "type": "function",
                                "function": {"name": tc["function"]["name"], "arguments": ""},
                            }
                        ]
                    }
                )
                deltas += [
                    {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}
                    for p in pieces(tc["function"]["arguments"])
                ]
            else:
                deltas += [{"content": p} for p in pieces(r.content or "")]
            for i, d in enumerate(deltas):
                left = len(r.token_ids) - pos
                # the closing special tokens ride on the last piece; tool-call pieces carry none before it
                n = left if i == len(deltas) - 1 else min(left, len(tokenize(d.get("content") or "")))
                ids = r.token_ids[pos : pos + n]
                choice: dict[str, Any] = {"index": r.index, "delta": d, "finish_reason": None}
                choice["logprobs"] = {"content": r.logprobs()["content"][pos : pos + n]} if want_lp else None
                if want_ids:
                    choice["token_ids"] = ids
                pos += n
                await self._event(send, {**head, "choices": [choice]})
                if self.chunk_delay_s:
                    await asyncio.sleep(self.chunk_delay_s)
            await self._event(
                send,
                {
                    **head,
                    "choices": [{"index": r.index, "delta": {}, "logprobs": None, "finish_reason": r.finish}],
                },
            )
        if include_usage:
            await self._event(send, {**head, "choices": [], "usage": usage})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    # ------------------------------------------------------------------ completions

    async def _completions(self, body: dict[str, Any], send: Any) -> None:
        prompt = body.get("prompt", "")
        batch = isinstance(prompt, list) and bool(prompt) and isinstance(prompt[0], (str, list))
        prompts = prompt if batch else [prompt]  # a list of strings or of token-id lists is a batch
        n = int(body.get("n") or 1)
        want_ids, want_lp = bool(body.get("return_token_ids")), body.get("logprobs") is not None
        choices, prompt_total, completion_total = [], 0, 0
        for pi, p in enumerate(prompts):
            ptext = (
                bytes(t for t in p if 0 <= t < 256).decode(errors="replace")
                if isinstance(p, list)
                else str(p)
            )
            pids = list(p) if isinstance(p, list) else tokenize(ptext)
            prompt_total += len(pids)
            for j in range(n):
                r = Reply({"max_tokens": body.get("max_tokens")}, j, ptext[-40:])
                completion_total += len(r.token_ids)
                c: dict[str, Any] = {"index": pi * n + j, "text": r.content, "finish_reason": r.finish}
                c["logprobs"] = (
                    {
                        "tokens": [bytes([t]).decode("latin-1") for t in r.token_ids],
                        "token_logprobs": [token_logprob(i) for i in range(len(r.token_ids))],
                        "top_logprobs": None,
                        "text_offset": list(range(len(r.token_ids))),
                    }
                    if want_lp
                    else None
                )
                if want_ids:
                    c["prompt_token_ids"], c["token_ids"] = pids, r.token_ids
                choices.append(c)
        usage = {
            "prompt_tokens": prompt_total,
            "completion_tokens": completion_total,
            "total_tokens": prompt_total + completion_total,
        }
        rid = "cmpl-" + hashlib.sha1(json.dumps(prompt).encode()).hexdigest()[:24]
        head = {
            "id": rid,
            "object": "text_completion",
            "created": int(time.time()),
            "model": body["model"],
            "system_fingerprint": "echo-1",
        }
        if not body.get("stream"):
            return await self._json(send, 200, {**head, "choices": choices, "usage": usage})
        await self._start_sse(send)
        for c in choices:
            for piece in pieces(c["text"] or ""):
                await self._event(
                    send,
                    {
                        **head,
                        "choices": [
                            {"index": c["index"], "text": piece, "logprobs": None, "finish_reason": None}
                        ],
                    },
                )
                if self.chunk_delay_s:
                    await asyncio.sleep(self.chunk_delay_s)
            last = {
                "index": c["index"],
                "text": "",
                "logprobs": c["logprobs"],
                "finish_reason": c["finish_reason"],
            }
            if want_ids:
                last["prompt_token_ids"], last["token_ids"] = c["prompt_token_ids"], c["token_ids"]
            await self._event(send, {**head, "choices": [last]})
        if (body.get("stream_options") or {}).get("include_usage"):
            await self._event(send, {**head, "choices": [], "usage": usage})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    # ------------------------------------------------------------------ wire

    @staticmethod
    async def _body(receive: Any) -> bytes:
        raw = b""
        while True:
            msg = await receive()
            raw += msg.get("body", b"")
            if not msg.get("more_body"):
                return raw

    @staticmethod
    async def _json(send: Any, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    @staticmethod
    async def _reflect(scope: dict[str, Any], raw: bytes, send: Any) -> None:
        """What arrived, as JSON in pieces of 16 bytes (``echo_extras.reflection``)."""
        data = json.dumps(echo_extras.reflection(scope, raw)).encode()
        headers = [(b"content-type", b"application/json"), (b"x-echo-reflected", b"1")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for i in range(0, len(data), 16):
            await send({"type": "http.response.body", "body": data[i : i + 16], "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    @staticmethod
    async def _start_sse(send: Any) -> None:
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})

    @staticmethod
    async def _event(send: Any, obj: Any) -> None:
        await send(
            {
                "type": "http.response.body",
                "body": b"data: " + json.dumps(obj).encode() + b"\n\n",
                "more_body": True,
            }
        )


_error = echo_extras.error


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    ap = argparse.ArgumentParser(description="Deterministic OpenAI-compatible echo backend.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8788)
    ap.add_argument("--models", default="echo-1", help="Comma-separated names listed by /v1/models.")
    ap.add_argument("--chunk-delay-ms", type=float, default=0.0, help="Sleep between streamed chunks.")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="Sleep before answering.")
    ap.add_argument("--api-key", default=None, help="Require this bearer key.")
    args = ap.parse_args(argv)
    app = EchoBackend(args.models.split(","), args.chunk_delay_ms / 1000, args.delay_ms / 1000, args.api_key)
    print(f"echo backend on http://{args.host}:{args.port}/v1", flush=True)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
