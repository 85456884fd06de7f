"""Recording: the ``StepEvent`` of an ended ``Step``, as the model (``build_step_event``) or as its wire
bytes (``step_event_bytes``).

One definition of what a step records: ``event_fields`` lays the event out as plain data, in the models'
field order, with what ``encode`` would write for every default. ``build_step_event`` validates that data
into the pydantic ``StepEvent``. ``step_event_bytes`` (the publishing path) skips the model when every value
already has the exact type its field takes: pydantic-core's own serialiser writes the data straight to JSON,
byte for byte what ``encode(build_step_event(step))`` gives, for less than half the CPU (measured by
``python -m bench.proxy_profile --publish``). Anything a field would coerce or refuse (a backend's
``"prompt_tokens": "12"``, a token id that is not an int, an unknown operation) takes the
model path, which coerces it, or raises for the dead-letter topic, as it always did.
"""

from __future__ import annotations

from typing import Any

import pydantic_core

from pipeline.proxy.linking.canonical import event_message
from pipeline.proxy.recording.step import RawChoice, Step, UpstreamRequest
from pipeline.proxy.recording.step_schema import (
    INF_NAN_MODE,
    OPERATIONS,
    OVERLAY_ARMS,
    PREFIX_COUNT_OK,
    PREFIX_LEN_OK,
    SAMPLING_CHECKS,
    SAMPLING_FLOATS,
    SAMPLING_ORDER,
    SAMPLING_UNSET,
    STEP_INDEX_OK,
)
from sluice.events import SCHEMA_VERSION, Message, StepEvent, encode, new_id, utcnow

_SAMPLING = ("temperature", "top_p", "top_k", "n", "presence_penalty", "frequency_penalty", "seed")
_SAMPLING_EXTRA = (
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "min_p",
    "repetition_penalty",
    "reasoning_effort",
    "logit_bias",
    "top_logprobs",
)
_SAMPLING_READ = (*_SAMPLING, *_SAMPLING_EXTRA, "max_completion_tokens")


def sampling_fields(req: UpstreamRequest) -> dict[str, Any]:
    """The sampling parameters a request names (a field the surface lacks may come as an unknown one).
    Read from the model's field and extra dicts: ``getattr`` of a name a model lacks raises inside."""
    declared, extra = req.__dict__, req.__pydantic_extra__ or {}
    fields = {k: declared[k] if k in declared else extra.get(k) for k in _SAMPLING_READ}
    data: dict[str, Any] = {k: fields[k] for k in _SAMPLING if fields[k] is not None}
    max_tokens = fields["max_completion_tokens"] or req.max_tokens
    if max_tokens is not None:
        data["max_tokens"] = max_tokens
    stop = req.stop
    if stop:
        data["stop"] = [stop] if isinstance(stop, str) else list(stop)
    for k in _SAMPLING_EXTRA:
        if fields[k] is not None:
            data[k] = fields[k]
    return data


def _message(raw: RawChoice) -> Message:
    msg = raw.message
    if not isinstance(msg, Message):
        msg = event_message({"role": "assistant", **(msg or {})}, f"choices[{raw.index}].message")
    return msg


def _some(values: dict[str, Any]) -> dict[str, Any]:
    """The fields that are set (``encode`` leaves out nulls)."""
    return {k: v for k, v in values.items() if v is not None}


def event_fields(rec: Step) -> dict[str, Any]:
    """The event of an ended step as plain data, field for field in the models' order."""
    ctx, plan = rec.ctx, rec.plan
    if not rec.ended:
        raise ValueError("the step has not ended")
    choices = [
        _some(
            {
                "index": c.index,
                "message": _message(c),
                "finish_reason": c.finish_reason,
                "token_ids": c.token_ids,
                "logprobs": c.logprobs,
            }
        )
        for c in rec.choices
    ]
    usage = rec.usage or {}
    prompt_ids = rec.prompt_token_ids
    caller = ctx.caller
    versions = rec.served_versions()
    gen_ai = {
        "operation_name": rec.operation,
        "provider_name": rec.provider,
        "request_model": rec.request.model,
        "response_model": rec.response_model,
        "response_id": rec.response_id,
        "finish_reasons": [c.finish_reason for c in rec.choices if c.finish_reason],
        "usage_input_tokens": usage.get("prompt_tokens", usage.get("input_tokens")),
        "usage_output_tokens": usage.get("completion_tokens", usage.get("output_tokens")),
        "conversation_id": ctx.session_id,
    }
    metadata = {
        "gen_ai": _some(gen_ai),
        "sampling": sampling_fields(rec.request),
        "backend": rec.backend.name,
        "backend_fingerprint": rec.system_fingerprint,
        "model_version": versions[-1] if versions else rec.backend.model_version,
        "policy_versions": versions,
        "task_id": rec.task_id,
        "harness_fingerprint": rec.harness_fp,
        "overlay_id": rec.overlay_id,
        "overlay_arm": rec.overlay_arm,
        "tool_versions": {},
        "stream": rec.stream,
        "latency_ms": rec.latency_ms,
        "time_to_first_token_ms": rec.ttft_ms,
        "started_at": ctx.started_at,
        "side_effects": [],
        "request_headers": ctx.headers,
    }
    observation = {
        "messages": rec.delta,
        "prefix_hash": plan.prefix_hash,
        "prefix_message_count": plan.prefix_count,
        "tools": rec.tools,
        "tools_fingerprint": rec.tools_fp,
        "prompt_text": rec.prompt_text,
    }
    action = {
        "choices": choices,
        "prompt_token_ids": prompt_ids[rec.prompt_prefix_len :] if prompt_ids is not None else None,
        "prompt_token_prefix_len": rec.prompt_prefix_len if prompt_ids is not None else 0,
    }
    training = caller.consent_training
    event = {
        "schema_version": SCHEMA_VERSION,
        "event_id": new_id(),
        "trajectory_id": plan.trajectory_id,
        "tenant": plan.tenant,
        "created_at": utcnow(),
        "event_type": "step",
        "session_id": ctx.session_id,
        "step_index": plan.step_index,
        "observation": _some(observation),
        "action": _some(action),
        "action_result": _some(
            {"tool_results": [], "feedback": [], "error": rec.error, "status_code": rec.status}
        ),
        "rewards": [],
        "metadata": _some(metadata),
        "governance": {
            "redaction": "raw",
            "data_class": caller.data_class,
            "consent": {"flags": {}} if training is None else {"training": training, "flags": {}},
            "subject_ids": list(caller.subject_ids),
        },
    }
    return _some(event)


def build_step_event(rec: Step) -> StepEvent:
    """The event of an ended step, validated (raises for what the protocol can not hold)."""
    return StepEvent.model_validate(event_fields(rec))


_TEXT = frozenset({str, type(None)})
_COUNT = frozenset({int, type(None)})


def _strs(*values: Any) -> bool:
    return set(map(type, values)) <= _TEXT


def _ints(*values: Any) -> bool:
    return set(map(type, values)) <= _COUNT


def _floats(values: Any) -> bool:
    return type(values) is list and set(map(type, values)) <= {float}


def _exact(f: dict[str, Any]) -> bool:
    """Whether every value already has the type its field takes, so the model would keep it as it is."""
    obs, action, meta, gov = f["observation"], f["action"], f["metadata"], f["governance"]
    gen, result = meta["gen_ai"], f["action_result"]
    texts = (
        f["trajectory_id"], f["tenant"], f.get("session_id"), obs["prefix_hash"], obs.get("tools_fingerprint"),
        obs.get("prompt_text"), result.get("error"), gen["provider_name"], gen["request_model"],
        gen.get("response_model"), gen.get("response_id"), gen.get("conversation_id"), meta["backend"],
        meta.get("backend_fingerprint"), meta.get("model_version"), meta.get("task_id"),
        meta.get("harness_fingerprint"), meta.get("overlay_id"), gov["data_class"],
    )  # fmt: skip
    counts = (gen.get("usage_input_tokens"), gen.get("usage_output_tokens"), result.get("status_code"))
    return (
        _strs(*texts, *gen["finish_reasons"], *meta["policy_versions"], *gov["subject_ids"])
        and _strs(*meta["request_headers"].values())
        and _ints(*counts)
        and STEP_INDEX_OK(f["step_index"])
        and PREFIX_COUNT_OK(obs["prefix_message_count"])
        and PREFIX_LEN_OK(action["prompt_token_prefix_len"])
        and gen["operation_name"] in OPERATIONS
        and meta.get("overlay_arm") in OVERLAY_ARMS
        and type(meta["stream"]) is bool
        and type(meta.get("latency_ms", 0.0)) is float
        and type(meta.get("time_to_first_token_ms", 0.0)) is float
        and type(gov["consent"].get("training", False)) is bool
        and all(type(m) is Message for m in obs["messages"])
        and all(type(t) is dict for t in obs.get("tools", ()))
        and _ints(*action.get("prompt_token_ids", ()))
        and all(_exact_choice(c) for c in action["choices"])
        and _exact_sampling(meta["sampling"])
    )


def _exact_choice(c: dict[str, Any]) -> bool:
    return (
        type(c["index"]) is int
        and _strs(c.get("finish_reason"))
        and _ints(*c.get("token_ids", ()))
        and ("logprobs" not in c or _floats(c["logprobs"]))
    )


def _exact_sampling(sampling: dict[str, Any]) -> bool:
    """The declared sampling fields' types and bounds, as ``step_schema`` reads them from the model (an int
    given for a float field becomes the float it reads as)."""
    for k, check in SAMPLING_CHECKS.items():
        v = sampling.get(k)
        if v is None:
            if k not in SAMPLING_UNSET:
                return False
            continue
        if k in SAMPLING_FLOATS and type(v) is int:
            v = sampling[k] = float(v)
        if not check(v):
            return False
    return True


def _in_model_order(sampling: dict[str, Any]) -> dict[str, Any]:
    """SamplingParams writes its declared fields first, in its order, then the unknown ones as given."""
    out = {k: sampling[k] for k in SAMPLING_ORDER if k in sampling}
    out.update((k, v) for k, v in sampling.items() if k not in out)
    return out


def step_event_bytes(rec: Step) -> bytes:
    """``encode(build_step_event(rec))``, without building the models when the values already fit them."""
    fields = event_fields(rec)
    if not _exact(fields):
        return encode(StepEvent.model_validate(fields))
    meta = fields["metadata"]
    meta["sampling"] = _in_model_order(meta["sampling"])
    return pydantic_core.to_json(fields, exclude_none=True, inf_nan_mode=INF_NAN_MODE)
