"""A schema-forced tool call's token ids are exactly its arguments text, so the agent's next call (the
history re-sent with the call and the tool's result) is served with prompt ids that extend the previous
prompt + completion: the turns chain, and a trainer can lay them end to end as one sequence. Real tiny
model and its char-level tokenizer, real xgrammar, the server's own chat serving (no HTTP)."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
import torch

from pipeline.learn.tasks import OrderLookupTask
from pipeline.learn.tasks.order_lookup import TOOL
from trainers.config import ServeConfig
from trainers.serving.chat import ChatServing
from trainers.serving.engine import GenerateEngine
from trainers.serving.grammar import SchemaConstraint, arguments_grammar
from trainers.serving.protocol import ChatCompletionRequest
from trainers.tiny_model import IM_END, build_tiny, build_tokenizer

SCHEMA = arguments_grammar(TOOL["function"]["parameters"])


def test_an_end_of_turn_token_the_model_prefers_is_served_as_the_closing_quote() -> None:
    """Greedy under logits that rank <|im_end|> first everywhere: where the string may close, the quote is
    the token chosen (the marker's mass goes to it), so the ids decode to the arguments, token for token."""
    tok = build_tokenizer()
    end = tok.convert_tokens_to_ids(IM_END)
    c = SchemaConstraint(SCHEMA, tok)
    ids: list[int] = []
    while not c.done:
        logits = torch.zeros(len(tok))
        logits[end] = 10.0
        ids.append(int(torch.argmax(c.constrain(logits))))
        c.advance(ids[-1])
    assert not c.stuck and end not in ids
    assert tok.decode(ids, skip_special_tokens=False) == c.text
    assert set(json.loads(c.text)) == {"order_id", "fields"}


@pytest.fixture(scope="module")
def chat():  # noqa: ANN201
    model, tok = build_tiny()
    engine = GenerateEngine(model, tok).start()
    yield ChatServing(engine, ServeConfig(), 4096)
    engine.stop()


def _request(messages: list[dict[str, Any]], **kw: Any) -> ChatCompletionRequest:
    return ChatCompletionRequest(model="sluice-tiny", messages=messages, temperature=1.0,
                                 return_token_ids=True, **kw)  # fmt: skip


async def _two_calls(chat: ChatServing, seed: int) -> tuple[list[int], list[int], str, list[int]]:
    """The forced lookup_order call, then the answer call with the call and its result re-sent; returns
    the first call's prompt + completion ids, the call's ids and arguments, and the second prompt's ids."""
    task = OrderLookupTask()
    messages = task.draw(random.Random(seed)).messages
    first = await chat.complete(
        _request(
            messages,
            tools=task.tools,
            tool_choice=task.tool_choice(),
            max_tokens=task.tool_max_tokens,
            seed=seed,
        ),
        conversation=f"episode-{seed}",
    )
    choice = first["choices"][0]
    call = choice["message"]["tool_calls"][0]
    args = call["function"]["arguments"]
    history = [*messages, {"role": "assistant", "content": None, "tool_calls": [call]},
               {"role": "tool", "tool_call_id": call["id"], "content": task.run_tool("lookup_order", args)}]  # fmt: skip
    second = await chat.complete(_request(history, max_tokens=4, seed=seed), conversation=f"episode-{seed}")
    return (
        first["prompt_token_ids"] + choice["token_ids"],
        choice["token_ids"],
        args,
        second["prompt_token_ids"],
    )


def test_a_re_sent_forced_call_extends_the_served_ids(chat: ChatServing) -> None:
    tok = chat.engine.tokenizer
    for seed in range(3):  # the tiny model ranks its special tokens high: each seed used to break the chain
        served, call_ids, args, prompt = asyncio.run(_two_calls(chat, seed))
        assert prompt[: len(served)] == served, seed
        assert tok.decode(call_ids, skip_special_tokens=False) == args
        assert "error" not in json.loads(OrderLookupTask().run_tool("lookup_order", args))
        assert len(prompt) > len(served)
