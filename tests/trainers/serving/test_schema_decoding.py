"""Schema-constrained decoding of forced tool calls (xgrammar), on the tiny model's real weights and
tokenizer: every output is a valid arguments object — nested objects, arrays and anyOf included — and
among valid values the model's own preference decides."""

from __future__ import annotations

import json
import re

import pytest
import torch

from pipeline.learn.tasks import OrderLookupTask
from pipeline.learn.tasks.order_lookup import FIELDS, ORDER_ID
from trainers.config import TinyModelConfig
from trainers.exceptions import RequestError
from trainers.generation import GenRequest, generate
from trainers.serving.grammar import SchemaConstraint, arguments_grammar, compiled, needs_grammar
from trainers.tiny_model import build_tiny

ENUM = ["low", "normal", "high", "urgent"]
SCHEMA = {
    "type": "object",
    "properties": {
        "priority": {"type": "string", "enum": ENUM},
        "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "count": {"type": "integer"},
        "notify": {"type": "boolean"},
        "note": {"type": "string", "maxLength": 6},
    },
    "required": ["priority", "date", "count", "notify"],
}


@pytest.fixture(scope="module")
def tiny():  # noqa: ANN201
    return build_tiny(TinyModelConfig())


def decode(
    tiny, schema, seed: int, temperature: float = 1.0, prompt: str = "book it", max_tokens: int = 160
) -> SchemaConstraint:  # noqa: ANN001
    model, tok = tiny
    c = SchemaConstraint(arguments_grammar(schema), tok)
    ids = tok(prompt, add_special_tokens=False)["input_ids"]
    req = GenRequest(prompt_ids=ids, max_tokens=max_tokens, temperature=temperature, constraint=c,
                     generator=torch.Generator().manual_seed(seed))  # fmt: skip
    res = generate(model, [req], tok.pad_token_id)[0]
    assert res.finish_reason == "stop" and c.done and not c.stuck, c.text
    return c


def test_sampled_arguments_always_follow_the_schema(tiny) -> None:  # noqa: ANN001
    seen = set()
    for seed in range(8):
        args = json.loads(decode(tiny, SCHEMA, seed).text)
        assert set(SCHEMA["required"]) <= set(args) <= set(SCHEMA["properties"])
        assert args["priority"] in ENUM
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", args["date"])
        assert type(args["count"]) is int and type(args["notify"]) is bool
        assert len(args.get("note", "")) <= 6
        seen.add(args["priority"])
    assert len(seen) > 1  # sampled: the values are the model's draws, not one fixed answer


def test_pattern_with_alternatives_and_free_text_ends_by_quote_or_special_token(tiny) -> None:  # noqa: ANN001
    schema = {"type": "object", "properties": {
        "code": {"type": "string", "pattern": "(EUR|USD|GBP)-[0-9]{3}"}, "text": {"type": "string"}},
        "required": ["code", "text"]}  # fmt: skip
    for seed in range(4):
        args = json.loads(decode(tiny, schema, seed).text)
        assert re.fullmatch("(EUR|USD|GBP)-[0-9]{3}", args["code"])
        assert isinstance(args["text"], str)


def test_the_enum_value_the_model_prefers_wins(tiny) -> None:  # noqa: ANN001
    """Greedy: the chosen value is the one whose first letter the model ranks highest among the enum's."""
    model, tok = tiny
    schema = {"type": "object", "properties": {"priority": {"type": "string", "enum": ENUM}},
              "required": ["priority"]}  # fmt: skip
    for prompt in ("book it", "urgent!", "a", "zzz"):
        got = json.loads(decode(tiny, schema, 0, temperature=0.0, prompt=prompt).text)["priority"]
        prefix = tok(prompt + '{"priority": "', add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([prefix])).logits[0, -1]
        firsts = {v[0]: v for v in ENUM}
        best = max(firsts, key=lambda ch: float(logits[tok.convert_tokens_to_ids(ch)]))
        assert got == firsts[best], (prompt, got)


def test_biased_logits_pick_the_biased_value(tiny) -> None:  # noqa: ANN001
    """Raise one enum value's first token: it wins; raise another's: that one wins."""
    _, tok = tiny
    schema = {"type": "object", "properties": {"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
              "required": ["unit"]}  # fmt: skip
    for first, want in (("c", "celsius"), ("f", "fahrenheit")):
        c = SchemaConstraint(arguments_grammar(schema), tok)
        bias = torch.zeros(len(tok))
        bias[tok.convert_tokens_to_ids(first)] = 5.0
        while not c.done:
            tok_id = int(torch.argmax(c.constrain(bias.clone())))
            c.advance(tok_id)
        assert json.loads(c.text) == {"unit": want}


NESTED = {
    "type": "object",
    "properties": {
        "when": {"type": "object", "properties": {"date": {"type": "string", "pattern": r"\d{4}-\d{2}-\d{2}"},
                                                  "flexible": {"type": "boolean"}}, "required": ["date", "flexible"]},
        "guests": {"type": "array", "items": {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0, "maximum": 120}},
                                              "required": ["age"]}, "maxItems": 3},
        "budget": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 999}, {"type": "string", "enum": ["low", "high"]}]},
    },
    "required": ["when", "guests", "budget"],
}  # fmt: skip


def test_nested_objects_arrays_and_any_of_decode_within_the_schema(tiny) -> None:  # noqa: ANN001
    budgets = set()
    for seed in range(6):
        args = json.loads(decode(tiny, NESTED, seed, max_tokens=400).text)
        assert set(args) == {"when", "guests", "budget"}
        assert (
            re.fullmatch(r"\d{4}-\d{2}-\d{2}", args["when"]["date"])
            and type(args["when"]["flexible"]) is bool
        )
        assert isinstance(args["guests"], list) and len(args["guests"]) <= 3
        assert all(
            set(g) == {"age"} and type(g["age"]) is int and 0 <= g["age"] <= 120 for g in args["guests"]
        )
        assert args["budget"] in ("low", "high") or (
            type(args["budget"]) is int and 0 <= args["budget"] <= 999
        )
        budgets.add(type(args["budget"]).__name__)
    assert budgets == {"int", "str"}  # both branches of the anyOf are the model's to take


def test_plain_string_schemas_keep_the_free_text_path_and_bad_schemas_are_400(tiny) -> None:  # noqa: ANN001
    _, tok = tiny
    assert not needs_grammar({"type": "object", "properties": {"q": {"type": "string", "description": "d"}}})
    assert needs_grammar({"type": "object", "properties": {"q": {"type": "string", "enum": ["a"]}}})
    assert needs_grammar(
        {"type": "object", "properties": {"x": {"type": "array", "items": {"type": "string"}}}}
    )
    assert needs_grammar({"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}]}}})
    with pytest.raises(RequestError, match="type object"):
        arguments_grammar({"type": "array"})
    with pytest.raises(RequestError, match="not declared"):
        arguments_grammar({"type": "object", "properties": {}, "required": ["x"]})
    with pytest.raises(RequestError, match="cannot be decoded"):
        compiled(
            arguments_grammar({"type": "object", "properties": {"x": {"type": "string", "pattern": "("}}}),
            tok,
        )
    with pytest.raises(RequestError, match="cannot be decoded"):
        compiled(arguments_grammar({"type": "object", "properties": {"x": {"type": "frob"}}}), tok)


def test_the_order_lookup_tools_nested_schema_decodes_into_calls_the_tool_runs(tiny) -> None:  # noqa: ANN001
    """The multi-step task's tool: an id under a pattern and an array of enum fields, as the model picks."""
    task = OrderLookupTask()
    schema = task.tools[0]["function"]["parameters"]
    picked = set()
    for seed in range(4):
        text = decode(tiny, schema, seed, max_tokens=task.tool_max_tokens).text
        args = json.loads(text)
        assert set(args) == {"order_id", "fields"} and re.fullmatch(ORDER_ID, args["order_id"])
        assert 1 <= len(args["fields"]) <= len(FIELDS) and set(args["fields"]) <= set(FIELDS)
        result = json.loads(task.run_tool("lookup_order", text))
        assert "error" not in result and set(result) == {"order_id", *args["fields"]}
        picked.update(args["fields"])
    assert len(picked) > 1  # the fields are the model's choice
