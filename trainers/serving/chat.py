"""POST /v1/chat/completions: ChatML prompt, n choices, stop strings, token ids, logprobs, forced tool calls.

Forced tool calls are a real, simple form of guided generation for a tiny model: when the request has tools
and ``tool_choice`` names a function (or is "required", meaning the first tool), the completion is returned
as a call to that function whose arguments are ``{"<first string parameter>": "<generated text>"}``. The
argument ends at the first special token (a chat model's end-of-turn marker such as ``<|im_end|>`` is
no part of a value): for a forced call the tokenizer's special tokens are stop strings too.

When the function's schema asks for more than plain strings (``enum``, ``pattern``, lengths, a number or
boolean, a nested object, an array, ``anyOf``), the model writes the whole arguments object under that
schema instead (``grammar``: xgrammar's per-row logits constraint inside the generate loop), so the arguments are valid
JSON that the schema accepts, with values the model chose; stop strings do not cut such a call, and a
call that runs out of tokens first ends with finish_reason "length".

A prompt is encoded through the server's ``TokenHistory``: a conversation re-sent with this server's last
answer keeps the ids it was served with (an assistant tool call renders as its arguments text, which is
what a schema-forced call generates, token for token: remembered under that text), so each call's prompt
ids extend the previous call's prompt + completion and a trainer can train the turns as one sequence.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from trainers.config import ServeConfig
from trainers.exceptions import RequestError
from trainers.serving.common import StopTrimmer, chain_first, job_args, new_id, now, sse, usage
from trainers.serving.engine import GenerateEngine, TokenEvent
from trainers.serving.grammar import SchemaConstraint, arguments_grammar, compiled, needs_grammar
from trainers.serving.policy_api import EXTENSION_FIELD, extension
from trainers.serving.protocol import ChatCompletionRequest
from trainers.serving.token_history import TokenHistory
from trainers.tiny_model import render_chat


@dataclass(frozen=True)
class ForcedTool:
    name: str
    param: str
    grammar: str | None = None  # the schema's JSON, set: the model writes the arguments JSON under it

    def open_args(self) -> str:
        return "" if self.grammar is not None else "{" + json.dumps(self.param) + ': "'

    def args(self, text: str) -> str:
        return text if self.grammar is not None else json.dumps({self.param: text})

    def fragment(self, text: str, closing: bool = False) -> str:
        """What a streamed text piece adds to the arguments string."""
        if self.grammar is not None:
            return text
        return json.dumps(text)[1:-1] + ('"}' if closing else "")


def forced_tool(req: ChatCompletionRequest) -> ForcedTool | None:
    """The tool a request forces, or None (tool_choice auto/none/absent leaves plain text)."""
    if not req.tools or req.tool_choice in (None, "auto", "none"):
        return None
    fns = {
        t.get("function", {}).get("name"): t.get("function", {})
        for t in req.tools
        if t.get("type", "function") == "function"
    }
    if req.tool_choice == "required":
        name = next(iter(fns), None)
    elif isinstance(req.tool_choice, dict):
        name = (req.tool_choice.get("function") or {}).get("name")
    else:
        raise RequestError(f"tool_choice {req.tool_choice!r} is not supported")
    if name not in fns:
        raise RequestError(f"tool_choice names {name!r}, which is not in tools")
    parameters = fns[name].get("parameters") or {}
    if needs_grammar(parameters):
        return ForcedTool(name=name, param="", grammar=arguments_grammar(parameters))
    props: dict[str, Any] = parameters.get("properties") or {}
    param = next((k for k, v in props.items() if isinstance(v, dict) and v.get("type") == "string"), None)
    return ForcedTool(name=name, param=param or next(iter(props), "text"))


def _logprob_entry(text: str, logprob: float) -> dict[str, Any]:
    return {"token": text, "logprob": logprob, "bytes": list(text.encode()), "top_logprobs": []}


class ChatServing:
    def __init__(self, engine: GenerateEngine, cfg: ServeConfig, max_positions: int) -> None:
        self.engine, self.cfg, self.max_positions = engine, cfg, max_positions
        self.history = TokenHistory(engine.tokenizer)
        self._specials = frozenset(engine.tokenizer.all_special_ids)

    def stops(self, req: ChatCompletionRequest, tool: ForcedTool | None) -> list[str]:
        """The request's stop strings; for a forced tool call also every special token."""
        if tool is None:
            return req.stops()
        if tool.grammar is not None:
            return []  # the schema ends the call; special tokens only ever close a free-text value
        if req.ignore_eos:
            return req.stops()  # the end-of-sequence text is decoded like any other text
        specials = [t for t in getattr(self.engine.tokenizer, "all_special_tokens", []) if t]
        return list(dict.fromkeys([*req.stops(), *specials]))

    def _prepare(
        self, req: ChatCompletionRequest, asked: str | None, conversation: str | None
    ) -> tuple[str, list[int], dict[str, Any], ForcedTool | None]:
        tok = self.engine.tokenizer
        text = render_chat(req.messages)
        prompt_ids = self.history.encode(text, conversation)
        tool = forced_tool(req)
        if tool is not None and tool.grammar is not None:
            compiled(tool.grammar, tok)  # a schema the engine cannot compile is a 400 now, not a failed job
        args = job_args(
            self.cfg, self.max_positions, prompt_ids, n=req.n, max_tokens=req.token_limit(),
            temperature=req.temperature, top_p=req.top_p, seed=req.seed, stop=self.stops(req, tool),
            eos_id=None if req.ignore_eos else tok.eos_token_id,
            constraint=None if tool is None or tool.grammar is None else partial(SchemaConstraint, tool.grammar, tok),
            version=asked,
        )  # fmt: skip
        return text, prompt_ids, args, tool

    async def complete(
        self, req: ChatCompletionRequest, asked: str | None = None, conversation: str | None = None
    ) -> dict[str, Any]:
        """The whole completion, decoded by policy version ``asked`` (None or not kept: the default);
        ``conversation`` keys its token history (``TokenHistory``)."""
        text, prompt_ids, args, tool = self._prepare(req, asked, conversation)
        trims = [StopTrimmer(tuple(self.stops(req, tool))) for _ in range(req.n)]
        entries: list[list[dict[str, Any]]] = [[] for _ in range(req.n)]
        choices: list[dict[str, Any]] = [{} for _ in range(req.n)]
        versions: list[str] = []
        async for ev in self.engine.submit(args):
            if not versions or versions[-1] != ev.version:
                versions.append(ev.version)
            if ev.result is None:
                trims[ev.index].feed(ev.text)
                entries[ev.index].append(_logprob_entry(ev.text, ev.logprob))
                continue
            choices[ev.index] = self._choice(req, ev, trims[ev.index], entries[ev.index], tool)
        for c, trim in zip(choices, trims, strict=True):
            sent = self._sent(tool, trim.text, c["_ids"])
            self.history.remember(text, prompt_ids, c["_ids"], conversation, sent)
        completion_tokens = sum(len(c.pop("_ids")) for c in choices)
        body: dict[str, Any] = {
            "id": new_id("chatcmpl"),
            "object": "chat.completion",
            "created": now(),
            "model": req.model,
            "choices": choices,
            "usage": usage(len(prompt_ids), completion_tokens),
            EXTENSION_FIELD: extension(versions, asked),
        }
        if req.return_token_ids:
            body["prompt_token_ids"] = prompt_ids
        return body

    def _choice(self, req, ev: TokenEvent, trim: StopTrimmer, entries, tool) -> dict[str, Any]:  # noqa: ANN001
        res = ev.result
        assert res is not None
        trim.flush()
        message: dict[str, Any] = {"role": "assistant", "content": trim.text}
        finish = "stop" if trim.stopped else res.finish_reason
        if tool is not None:
            call = {
                "id": new_id("call"),
                "type": "function",
                "function": {"name": tool.name, "arguments": tool.args(trim.text)},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "length" if tool.grammar is not None and res.finish_reason == "length" else "tool_calls"
        choice: dict[str, Any] = {
            "index": ev.index,
            "message": message,
            "finish_reason": finish,
            "_ids": res.token_ids,
        }
        choice["logprobs"] = {"content": entries} if req.logprobs else None
        if req.return_token_ids:
            choice["token_ids"] = res.token_ids
        return choice

    def stream(
        self,
        req: ChatCompletionRequest,
        versions: list[str],
        asked: str | None = None,
        conversation: str | None = None,
    ) -> AsyncIterator[str]:
        """Validate now (a bad request is a 400, not a broken stream), then stream SSE lines. ``versions``
        fills with the policy versions used, the first one before the first line is yielded."""
        text, prompt_ids, args, tool = self._prepare(req, asked, conversation)
        return self._stream(req, (text, conversation), prompt_ids, args, tool, versions)

    async def _stream(
        self,
        req: ChatCompletionRequest,
        seen: tuple[str, str | None],  # the prompt's text and conversation, for the token history
        prompt_ids: list[int],
        args: dict[str, Any],
        tool: ForcedTool | None,
        versions: list[str],
    ) -> AsyncIterator[str]:
        trims = [StopTrimmer(tuple(self.stops(req, tool))) for _ in range(req.n)]
        head = {
            "id": new_id("chatcmpl"),
            "object": "chat.completion.chunk",
            "created": now(),
            "model": req.model,
        }
        first = True
        completion_tokens = 0
        finished = 0
        served: list[list[int]] = [[] for _ in range(req.n)]  # each choice's ids, for the token history
        last_is_usage = bool(req.stream_options and req.stream_options.include_usage)

        def chunk(
            index: int, delta: dict[str, Any], finish: str | None = None, last: bool = False, **extra: Any
        ) -> str:
            nonlocal first
            choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish, **extra}
            body = {**head, "choices": [choice]}
            if first and req.return_token_ids:
                body["prompt_token_ids"] = prompt_ids
            if first or last:  # the first and the final chunk name the policy version(s)
                body[EXTENSION_FIELD] = extension(versions, args["version"])
            first = False
            return sse(body)

        # The role chunk waits for the job's first event: by then its batch started, and its version is known.
        events = self.engine.submit(args)
        head_ev = await anext(events)
        versions.append(head_ev.version)
        for i in range(req.n):  # role first, as OpenAI does; a forced tool announces its call here
            delta: dict[str, Any] = {"role": "assistant", "content": "" if tool is None else None}
            if tool is not None:
                delta["tool_calls"] = [{"index": 0, "id": new_id("call"), "type": "function",
                                        "function": {"name": tool.name, "arguments": tool.open_args()}}]  # fmt: skip
            yield chunk(i, delta)
        async for ev in chain_first(head_ev, events):
            if ev.version != versions[-1]:
                versions.append(ev.version)
            if ev.result is None:
                completion_tokens += 1
                served[ev.index].append(ev.token_id)
                piece = trims[ev.index].feed(ev.text)
                extra: dict[str, Any] = {}
                if req.logprobs:
                    extra["logprobs"] = {"content": [_logprob_entry(ev.text, ev.logprob)]}
                if req.return_token_ids:
                    extra["token_ids"] = [ev.token_id]
                yield chunk(ev.index, self._delta(piece, tool), **extra)
                continue
            tail = trims[ev.index].flush()
            sent = self._sent(tool, trims[ev.index].text, served[ev.index])
            self.history.remember(seen[0], prompt_ids, served[ev.index], seen[1], sent)
            if tool is None:
                finish = "stop" if trims[ev.index].stopped else ev.result.finish_reason
            else:
                cut = tool.grammar is not None and ev.result.finish_reason == "length"
                finish = "length" if cut else "tool_calls"
            delta = self._delta(tail, tool, closing=tool is not None)
            finished += 1
            last = finished == req.n and not last_is_usage
            extra = {"token_ids": []} if req.return_token_ids else {}
            yield chunk(ev.index, delta, finish, last=last, **extra)
        if last_is_usage:
            tail_body = {**head, "choices": [], "usage": usage(len(prompt_ids), completion_tokens)}
            yield sse({**tail_body, EXTENSION_FIELD: extension(versions, args["version"])})
        yield sse("[DONE]")

    def _sent(self, tool: ForcedTool | None, text: str, ids: list[int]) -> str | None:
        """The text ``ids`` stand for as the client sends the reply back, for the token history: a
        schema-forced call's arguments (``text``, the constraint's, exactly those tokens' bytes) unless a
        special token ended the row (nothing could continue the object: that token is no part of the
        arguments); None (the ids decoded) otherwise."""
        if tool is None or tool.grammar is None or self._specials.intersection(ids):
            return None
        return tool.args(text)

    @staticmethod
    def _delta(text: str, tool: ForcedTool | None, closing: bool = False) -> dict[str, Any]:
        if tool is None:
            return {"content": text} if text else {}
        frag = tool.fragment(text, closing)
        return {"tool_calls": [{"index": 0, "function": {"arguments": frag}}]} if frag else {}
