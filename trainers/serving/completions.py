"""POST /v1/completions: raw text (or token-id) prompts, n choices per prompt, echo, logprobs, token ids;
``echo`` + ``logprobs`` + ``max_tokens: 0`` scores the prompts (each token's log-probability), generating
nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from trainers.config import ServeConfig
from trainers.exceptions import RequestError
from trainers.serving.common import StopTrimmer, job_args, new_id, now, sse, usage
from trainers.serving.engine import GenerateEngine
from trainers.serving.policy_api import EXTENSION_FIELD, extension
from trainers.serving.protocol import CompletionRequest


class CompletionServing:
    def __init__(self, engine: GenerateEngine, cfg: ServeConfig, max_positions: int) -> None:
        self.engine, self.cfg, self.max_positions = engine, cfg, max_positions

    def _prompts(self, req: CompletionRequest) -> list[list[int]]:
        if req.suffix:
            raise RequestError("suffix is not supported by this model")
        tok = self.engine.tokenizer
        if isinstance(req.prompt, str):
            return [tok(req.prompt, add_special_tokens=False)["input_ids"]]
        if req.prompt and all(isinstance(p, int) for p in req.prompt):
            return [self._ids(list(req.prompt))]  # type: ignore[arg-type]
        if req.prompt and all(isinstance(p, list) for p in req.prompt):
            return [self._ids(p) for p in req.prompt]  # type: ignore[arg-type]
        return [tok(p, add_special_tokens=False)["input_ids"] for p in req.prompt]  # type: ignore[arg-type]

    def _ids(self, ids: list[int]) -> list[int]:
        n = len(self.engine.tokenizer)
        if ids and (max(ids) >= n or min(ids) < 0):
            raise RequestError(f"prompt token ids must be in [0, {n})")
        return ids

    def _args(self, req: CompletionRequest, prompt_ids: list[int], asked: str | None) -> dict[str, Any]:
        return job_args(
            self.cfg, self.max_positions, prompt_ids, n=req.n, max_tokens=req.max_tokens,
            temperature=req.temperature, top_p=req.top_p, seed=req.seed, stop=req.stops(),
            eos_id=None if req.ignore_eos else self.engine.tokenizer.eos_token_id, version=asked,
        )  # fmt: skip

    async def _one(
        self, req: CompletionRequest, p: int, prompt_ids: list[int], versions: list[str], asked: str | None
    ) -> list[dict[str, Any]]:
        trims = [StopTrimmer(tuple(req.stops())) for _ in range(req.n)]
        tokens: list[list[str]] = [[] for _ in range(req.n)]
        lps: list[list[float]] = [[] for _ in range(req.n)]
        choices: list[dict[str, Any]] = [{} for _ in range(req.n)]
        prompt_text = self.engine.tokenizer.decode(prompt_ids) if req.echo else ""
        async for ev in self.engine.submit(self._args(req, prompt_ids, asked)):
            if not versions or versions[-1] != ev.version:
                versions.append(ev.version)
            if ev.result is None:
                trims[ev.index].feed(ev.text)
                tokens[ev.index].append(ev.text)
                lps[ev.index].append(ev.logprob)
                continue
            trim = trims[ev.index]
            trim.flush()
            choice: dict[str, Any] = {
                "index": p * req.n + ev.index,
                "text": prompt_text + trim.text,
                "finish_reason": "stop" if trim.stopped else ev.result.finish_reason,
                "logprobs": None,
                "_n": len(ev.result.token_ids),
            }
            if req.logprobs is not None:
                offsets, pos = [], len(prompt_text)
                for t in tokens[ev.index]:
                    offsets.append(pos)
                    pos += len(t)
                choice["logprobs"] = {"tokens": tokens[ev.index], "token_logprobs": lps[ev.index],
                                      "top_logprobs": None, "text_offset": offsets}  # fmt: skip
            if req.return_token_ids:
                choice["prompt_token_ids"] = prompt_ids
                choice["token_ids"] = ev.result.token_ids
            choices[ev.index] = choice
        return choices

    async def complete(self, req: CompletionRequest, asked: str | None = None) -> dict[str, Any]:
        """Every prompt's choices, decoded by policy version ``asked`` (None or not kept: the default).
        ``echo`` with ``logprobs`` and ``max_tokens: 0`` scores the prompts instead (``score``)."""
        prompts = self._prompts(req)
        if req.echo and req.logprobs is not None and req.max_tokens == 0:
            return await self.score(req, prompts, asked)
        for ids in prompts:
            self._args(req, ids, asked)  # validate every prompt before generating any
        versions: list[str] = []  # prompts run as separate jobs: a swap may fall between them
        per_prompt = await asyncio.gather(
            *(self._one(req, p, ids, versions, asked) for p, ids in enumerate(prompts))
        )
        choices = [c for group in per_prompt for c in group]
        completion_tokens = sum(c.pop("_n") for c in choices)
        return {
            "id": new_id("cmpl"),
            "object": "text_completion",
            "created": now(),
            "model": req.model,
            "choices": choices,
            "usage": usage(sum(map(len, prompts)), completion_tokens),
            EXTENSION_FIELD: extension(versions, asked),
        }

    async def score(
        self, req: CompletionRequest, prompts: list[list[int]], asked: str | None
    ) -> dict[str, Any]:
        """The prompts echoed with each token's log-probability under the version (the first token's is
        None), generating nothing: the legacy OpenAI way to score a text, as vLLM answers it too."""
        if any(len(ids) < 1 for ids in prompts):
            raise RequestError("a prompt to score needs at least one token")
        version, lps = await self.engine.score(prompts, asked)
        choices = []
        for i, (ids, lp) in enumerate(zip(prompts, lps, strict=True)):
            tokens = [self.engine.tokenizer.decode([t]) for t in ids]
            offsets, pos = [], 0
            for t in tokens:
                offsets.append(pos)
                pos += len(t)
            choice: dict[str, Any] = {
                "index": i, "text": "".join(tokens), "finish_reason": "length",
                "logprobs": {"tokens": tokens, "token_logprobs": [None, *lp], "top_logprobs": None,
                             "text_offset": offsets},
            }  # fmt: skip
            if req.return_token_ids:
                choice["prompt_token_ids"] = ids
            choices.append(choice)
        return {
            "id": new_id("cmpl"),
            "object": "text_completion",
            "created": now(),
            "model": req.model,
            "choices": choices,
            "usage": usage(sum(map(len, prompts)), 0),
            EXTENSION_FIELD: extension([version], asked),
        }

    def stream(
        self, req: CompletionRequest, versions: list[str], asked: str | None = None
    ) -> AsyncIterator[str]:
        """Validate now (a bad request is a 400, not a broken stream), then stream SSE lines. ``versions``
        fills with the policy versions used, the first one before the first line is yielded."""
        prompts = self._prompts(req)
        if len(prompts) != 1:
            raise RequestError("streaming supports one prompt per request")
        return self._stream(req, prompts[0], self._args(req, prompts[0], asked), versions)

    async def _stream(
        self, req: CompletionRequest, prompt_ids: list[int], args: dict[str, Any], versions: list[str]
    ) -> AsyncIterator[str]:
        head = {"id": new_id("cmpl"), "object": "text_completion", "created": now(), "model": req.model}
        trims = [StopTrimmer(tuple(req.stops())) for _ in range(req.n)]
        sent_ids = [False] * req.n
        sent_echo = [False] * req.n
        completion_tokens = 0
        first, finished = True, 0
        last_is_usage = bool(req.stream_options and req.stream_options.include_usage)

        def chunk(index: int, text: str, finish: str | None = None, last: bool = False, **extra: Any) -> str:
            nonlocal first
            if req.return_token_ids and not sent_ids[index]:
                extra["prompt_token_ids"] = prompt_ids
                sent_ids[index] = True
            if req.echo and not sent_echo[index]:
                text = self.engine.tokenizer.decode(prompt_ids) + text
                sent_echo[index] = True
            choice = {"index": index, "text": text, "logprobs": None, "finish_reason": finish, **extra}
            body = {**head, "choices": [choice]}
            if first or last:  # the first and the final chunk name the policy version(s)
                body[EXTENSION_FIELD] = extension(versions, args["version"])
            first = False
            return sse(body)

        async for ev in self.engine.submit(args):
            if not versions or versions[-1] != ev.version:
                versions.append(ev.version)
            if ev.result is None:
                completion_tokens += 1
                extra: dict[str, Any] = {}
                if req.logprobs is not None:
                    extra["logprobs"] = {
                        "tokens": [ev.text],
                        "token_logprobs": [ev.logprob],
                        "top_logprobs": None,
                    }
                if req.return_token_ids:
                    extra["token_ids"] = [ev.token_id]
                yield chunk(ev.index, trims[ev.index].feed(ev.text), **extra)
                continue
            trim = trims[ev.index]
            tail = trim.flush()
            finished += 1
            last = finished == req.n and not last_is_usage
            yield chunk(ev.index, tail, "stop" if trim.stopped else ev.result.finish_reason, last=last)
        if last_is_usage:
            tail_body = {**head, "choices": [], "usage": usage(len(prompt_ids), completion_tokens)}
            yield sse({**tail_body, EXTENSION_FIELD: extension(versions, args["version"])})
        yield sse("[DONE]")
