"""The step event's wire bytes: written straight from the step's data, they are what the models write."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any, get_args

import pytest
from pydantic import ValidationError

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.linking.canonical import event_message
from pipeline.proxy.linking.history_linker import StepPlan
from pipeline.proxy.openai_chat.protocol import ChatCompletionRequest
from pipeline.proxy.openai_completions.assembler import CompletionStreamAssembler
from pipeline.proxy.openai_completions.protocol import CompletionRequest
from pipeline.proxy.recording import step_event as step_event_module
from pipeline.proxy.recording.step import RawChoice, Step, chat_logprobs, completion_logprobs
from pipeline.proxy.recording.step_event import build_step_event, step_event_bytes
from pipeline.proxy.surfaces.auth import Caller
from pipeline.proxy.surfaces.context import CallContext
from sluice.events import GenAIAttributes, Message, StepEvent, StepMetadata, decode, encode, new_id

_MESSAGES = [
    {"role": "system", "content": "You are a coding agent. Schreib kurz: é, 漢字, \u2028."},
    {"role": "user", "content": [{"type": "text", "text": "run it"}], "name": "ann"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "run", "arguments": '{"n": 1}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "ran", "x_vendor": {"kept": None, "n": 1e-7}},
]
_TOOLS = [{"type": "function", "function": {"name": "run", "parameters": {"minimum": 1e20, "d": None}}}]


def _step(request: dict[str, Any], **ended: Any) -> Step:
    caller = Caller(tenant="acme", data_class="confidential", consent_training=True, subject_ids=("u-1",))
    ctx = CallContext(
        caller, None, "header", "sess-1", {"user-agent": "sdk/1"}, datetime.now(UTC), 0.0, "task-9"
    )
    req = ChatCompletionRequest.model_validate(request)
    plan = StepPlan("acme", "acme~t1", 3, "history", 2, "ab" * 32)
    step = Step(
        ctx, plan, BackendConfig(name="echo", base_url="http://127.0.0.1:1/v1"), "chat", "openai", req
    )
    step.delta = [event_message(m, "m") for m in _MESSAGES[2:]]
    step.tools, step.tools_fp, step.harness_fp = _TOOLS, "fp-tools", "fp-harness"
    step.policy_versions = ["v7"]
    choice = RawChoice(0, {"content": "done", "refusal": None}, "stop", [5, 6], [-0.5, -1e-9])
    answer = {"id": "r1", "model": "m", "usage": {"prompt_tokens": 20, "completion_tokens": 2}}
    step.end(
        **{"status": 200, "error": None, "latency_ms": 12.5, "answer": answer, "choices": [choice], **ended}
    )
    step.prompt_token_ids, step.prompt_prefix_len = [1, 2, 3, 4], 2
    return step


_FULL = {
    "model": "m",
    "messages": _MESSAGES,
    "temperature": 1,
    "top_p": 0.9,
    "max_completion_tokens": 64,
    "stop": "END",
    "seed": 7,
    "tool_choice": "auto",
    "response_format": {"type": "json_object", "schema": None},
    "metadata": {"k": "v"},
}


@pytest.mark.parametrize(
    "request_body",
    [{"model": "m", "messages": _MESSAGES[:2]}, _FULL, {**_FULL, "top_k": 4, "stop": ["a", "b"], "n": 2}],
)
def test_the_bytes_are_what_the_model_writes_for_the_same_event(request_body: dict[str, Any]) -> None:
    step = _step(request_body)
    data = step_event_bytes(step)
    event = decode(data)
    assert isinstance(event, StepEvent)
    assert (
        encode(event) == data
    )  # field order, defaults, nulls left out, numbers and text: as the model writes
    built = build_step_event(step).model_copy(
        update={"event_id": event.event_id, "created_at": event.created_at}
    )
    assert built == event
    assert event.metadata.sampling.temperature == 1.0 if "temperature" in request_body else True
    assert event.observation.messages[1].model_extra == {"x_vendor": {"kept": None, "n": 1e-7}}


def test_values_a_field_would_coerce_or_refuse_take_the_model_path() -> None:
    step = _step(_FULL, answer={"id": "r1", "usage": {"prompt_tokens": "20", "completion_tokens": 2.0}})
    event = decode(step_event_bytes(step))
    assert isinstance(event, StepEvent)
    assert (event.metadata.gen_ai.usage_input_tokens, event.metadata.gen_ai.usage_output_tokens) == (20, 2)
    bad = _step(_FULL, answer={"id": {"not": "a string"}})
    with pytest.raises(ValidationError):
        step_event_bytes(bad)


def test_event_ids_have_the_uuid4_hex_form() -> None:
    ids = {new_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 32 and i[12] == "4" and i[16] in "89ab" for i in ids)


def test_a_text_completion_records_its_prompt_and_the_sampling_it_names_unknown_ones_included() -> None:
    step = _step({"model": "m", "messages": _MESSAGES[:1]})
    step.request = CompletionRequest.model_validate(
        {
            "model": "m",
            "prompt": "p",
            "temperature": 0,
            "max_completion_tokens": 9,
            "min_p": 0.1,
            "stop": ["x"],
        }
    )
    step.operation, step.prompt_text, step.delta = "text_completion", "p", []
    data = step_event_bytes(step)
    event = decode(data)
    assert isinstance(event, StepEvent)
    assert encode(event) == data
    assert event.observation.prompt_text == "p"
    sampling = event.metadata.sampling
    assert (sampling.temperature, sampling.max_tokens, sampling.stop) == (0.0, 9, ["x"])
    assert sampling.model_extra == {"min_p": 0.1}


# ----------------------------------------------------------------------------- many steps, one oracle
# Each case changes a step; the model (``build_step_event`` then ``encode``) says what its bytes must be,
# or that it refuses the step. ``fast`` is whether the straight-to-JSON path should have written them.

_OPERATIONS = get_args(GenAIAttributes.model_fields["operation_name"].annotation)
_ARMS = (None, *get_args(get_args(StepMetadata.model_fields["overlay_arm"].annotation)[0]))
_TOOL_CALL = {"id": "c2", "type": "function", "function": {"name": "run", "arguments": "{}"}}
_CALLS_A_TOOL = RawChoice(0, {"content": None, "tool_calls": [_TOOL_CALL]}, "tool_calls")
_A_MESSAGE = RawChoice(1, Message(role="assistant", content="x"), None, [], [0.0])


def _set(**attrs: Any) -> Any:
    """A change that sets the step's attributes (``request_x``: its request's ``x``) as given, unchecked."""

    def change(step: Step) -> None:
        for name, value in attrs.items():
            target = step.request if name.startswith("request_") else step
            setattr(target, name.removeprefix("request_"), value)

    return change


def _usage(usage: Any) -> Any:
    def change(step: Step) -> None:
        step.usage = usage

    return change


def _plan(**fields: Any) -> Any:
    def change(step: Step) -> None:
        step.plan = dataclasses.replace(step.plan, **fields)

    return change


def _choices(*choices: RawChoice) -> Any:
    def change(step: Step) -> None:
        step.choices = list(choices)

    return change


_CASES: list[tuple[str, dict[str, Any], Any, bool]] = [
    ("no-sampling", {"model": "m", "messages": _MESSAGES[:2]}, _set(), True),
    ("full", _FULL, _set(), True),
    ("stop-list-extras", {**_FULL, "top_k": 4, "stop": ["a", "b"], "n": 2, "min_p": 0.1}, _set(), True),
    ("penalties", {**_FULL, "presence_penalty": 0, "frequency_penalty": -0.5, "seed": -3}, _set(), True),
    ("int-for-float", _FULL, _set(request_temperature=1, request_top_p=0), True),
    ("float-for-int", _FULL, _set(request_top_k=4.0), False),
    ("bool-for-int", _FULL, _set(request_seed=True), False),
    ("str-for-float", _FULL, _set(request_temperature="0.5"), False),
    ("not-finite", _FULL, _set(request_temperature=float("inf"), latency_ms=float("nan")), True),
    ("stop-tuple", _FULL, _set(request_stop=("x", "y")), True),
    ("stop-not-text", _FULL, _set(request_stop=[1]), False),
    *((f"operation-{op}", _FULL, _set(operation=op), True) for op in _OPERATIONS),
    ("operation-unknown", _FULL, _set(operation="embeddings"), False),
    *((f"arm-{arm}", _FULL, _set(overlay_id="ov-1", overlay_arm=arm), True) for arm in _ARMS),
    ("arm-unknown", _FULL, _set(overlay_id="ov-1", overlay_arm="treatment"), False),
    ("tool-call-choice", _FULL, _choices(_CALLS_A_TOOL), True),
    ("message-choice", _FULL, _choices(_A_MESSAGE), True),
    ("int-logprobs", _FULL, _choices(RawChoice(0, {"content": "x"}, "stop", [1], [0, -1])), False),
    ("usage-none", _FULL, _usage(None), True),
    ("usage-input-output", _FULL, _usage({"input_tokens": 5, "output_tokens": 0}), True),
    ("usage-str", _FULL, _usage({"prompt_tokens": "20", "completion_tokens": 2}), False),
    ("usage-float", _FULL, _usage({"prompt_tokens": 2.0}), False),
    ("usage-bool", _FULL, _usage({"prompt_tokens": True}), False),
    ("usage-huge-negative", _FULL, _usage({"prompt_tokens": 2**70, "completion_tokens": -1}), True),
    ("usage-not-a-count", _FULL, _usage({"prompt_tokens": "many"}), False),
    ("step-index-negative", _FULL, _plan(step_index=-1), False),
    ("prefix-count-negative", _FULL, _plan(prefix_count=-2), False),
    ("prefix-len-negative", _FULL, _set(prompt_prefix_len=-1), False),
]  # fmt: skip


@pytest.mark.parametrize(("body", "change", "fast"), [c[1:] for c in _CASES], ids=[c[0] for c in _CASES])
def test_every_byte_string_is_one_the_model_writes_and_reads(
    body: dict[str, Any], change: Any, fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bytes equal ``encode(build_step_event(step))`` (same ids and times) and validate as a step
    event; where the model refuses the step, so does ``step_event_bytes`` (by the model path)."""
    monkeypatch.setattr(step_event_module, "new_id", lambda: "e" * 32)
    monkeypatch.setattr(step_event_module, "utcnow", lambda: datetime(2026, 1, 2, tzinfo=UTC))
    model_path: list[bool] = []

    def model_encode(event: StepEvent) -> bytes:
        model_path.append(True)
        return encode(event)

    monkeypatch.setattr(step_event_module, "encode", model_encode)
    step = _step(body)
    change(step)
    try:
        expected = encode(build_step_event(step))
    except ValidationError:
        with pytest.raises(ValidationError):
            step_event_bytes(step)
        assert not fast
        return
    data = step_event_bytes(step)
    assert StepEvent.model_validate_json(data) == StepEvent.model_validate_json(expected)
    assert data == expected
    assert model_path == ([] if fast else [True])


def test_a_logprob_the_event_cannot_hold_records_no_logprobs_and_the_event_still_reads() -> None:
    """Python's JSON reader takes ``-Infinity`` and ``NaN`` from a backend; the event's JSON has no literal
    for them, so such a choice records no logprobs (never a null inside the list, which no reader takes,
    nor a shorter list, which would shift every later token's logprob)."""
    answer = json.loads(
        '{"choices": [{"logprobs": {"content": [{"logprob": -0.5}, {"logprob": -Infinity}]}},'
        '{"logprobs": {"content": [{"logprob": -0.25}, {"logprob": -1}]}},'
        '{"logprobs": {"content": [{"logprob": NaN}]}}, {"logprobs": {"content": [{"logprob": "x"}]}}]}'
    )
    read = [chat_logprobs(c["logprobs"]) for c in answer["choices"]]
    assert read == [None, [-0.25, -1.0], None, None]
    tokens = json.loads('{"token_logprobs": [null, -0.1, -Infinity]}')
    assert completion_logprobs(tokens) is None
    assert completion_logprobs({"token_logprobs": [None, -0.1]}) == [0.0, -0.1]
    for logprobs in read:
        step = _step(_FULL, choices=[RawChoice(0, {"content": "done"}, "stop", [5, 6], logprobs)])
        data = step_event_bytes(step)
        event = decode(data)
        assert isinstance(event, StepEvent) and encode(event) == data
        assert event.action.choices[0].logprobs == logprobs


def test_a_streamed_completion_with_a_bad_logprob_records_none_rather_than_a_shifted_list() -> None:
    asm = CompletionStreamAssembler()
    for text, lp in (("a", -0.5), ("b", float("-inf")), ("c", -0.25)):
        asm.feed({"choices": [{"index": 0, "text": text, "logprobs": {"token_logprobs": [lp]}}]})
    (choice,) = asm.result()["choices"]
    assert choice["logprobs"]["token_logprobs"][1] == float("-inf")  # kept in place while assembling
    assert completion_logprobs(choice["logprobs"]) is None
