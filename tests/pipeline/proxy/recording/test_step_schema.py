"""What the fast path reads from the step event's models is what those models accept: each check says yes
to exactly the values its field keeps as they are, and follows a model that changes."""

from __future__ import annotations

from typing import Any, Literal

import pydantic_core
import pytest
from pydantic import BaseModel, Field, ValidationError

from pipeline.proxy.recording import step_schema
from sluice.events import Action, GenAIAttributes, Observation, SamplingParams, StepEvent, StepMetadata

_PROBES: tuple[Any, ...] = (
    None, -1, 0, 1, 7, 2**70, True, 1.0, -0.5, 1.5, float("inf"), "1", "chat", "", ["a"], ["a", 1], [1], {},
    "text_completion", "responses", "messages", "embeddings", "Chat", "control", "candidate", "treatment",
)  # fmt: skip


def _keeps(model: type[BaseModel], name: str, value: Any) -> bool:
    """Whether the model's own validator takes ``value`` for the field and keeps it as it is."""
    try:
        out = model.__pydantic_validator__.validate_assignment(model.model_construct(), name, value)
    except ValidationError:
        return False
    kept = getattr(out, name)
    return type(kept) is type(value) and pydantic_core.to_json(kept) == pydantic_core.to_json(value)


@pytest.mark.parametrize(
    ("model", "name", "derived"),
    [
        (GenAIAttributes, "operation_name", step_schema.OPERATIONS),
        (StepMetadata, "overlay_arm", step_schema.OVERLAY_ARMS),
    ],
)
def test_the_literal_sets_are_the_values_the_model_accepts(
    model: type[BaseModel], name: str, derived: frozenset[Any]
) -> None:
    hashable = [p for p in _PROBES if not isinstance(p, list | dict)]
    assert {p for p in hashable if _keeps(model, name, p)} == derived


@pytest.mark.parametrize(
    ("model", "name", "check"),
    [
        (StepEvent, "step_index", step_schema.STEP_INDEX_OK),
        (Observation, "prefix_message_count", step_schema.PREFIX_COUNT_OK),
        (Action, "prompt_token_prefix_len", step_schema.PREFIX_LEN_OK),
    ],
)
def test_the_count_checks_take_what_the_model_keeps(model: type[BaseModel], name: str, check: Any) -> None:
    assert [check(p) for p in _PROBES] == [_keeps(model, name, p) for p in _PROBES]
    assert not check(-1) and check(0)


def test_the_sampling_checks_take_what_sampling_params_keeps_field_by_field() -> None:
    assert tuple(SamplingParams.model_fields) == step_schema.SAMPLING_ORDER
    for name, check in step_schema.SAMPLING_CHECKS.items():
        assert [check(p) for p in _PROBES] == [_keeps(SamplingParams, name, p) for p in _PROBES], name
    floats = {k for k in step_schema.SAMPLING_ORDER if _keeps(SamplingParams, k, 0.5)}
    assert floats == step_schema.SAMPLING_FLOATS
    assert "temperature" in floats and "seed" not in floats
    assert set(SamplingParams.model_fields) == step_schema.SAMPLING_UNSET


class _Changed(BaseModel):
    """A model as a change to the step event might leave one: narrowed, newly bounded, retyped."""

    operation: Literal["chat"] = "chat"
    arm: Literal["a", "b"] | None = None
    count: int = Field(0, gt=2, le=5)
    even: int = Field(0, multiple_of=2)
    weights: list[float] | None = None
    mapping: dict[str, int] | None = None


def test_the_readers_follow_a_changed_model() -> None:
    assert step_schema.literal_values(_Changed, "operation") == {"chat"}
    assert step_schema.literal_values(_Changed, "arm") == {"a", "b", None}
    with pytest.raises(TypeError):
        step_schema.literal_values(_Changed, "count")
    count = step_schema.field_check(_Changed, "count")
    assert [count(p) for p in _PROBES] == [_keeps(_Changed, "count", p) for p in _PROBES]
    weights = step_schema.field_check(_Changed, "weights")
    assert [weights(p) for p in ([0.5], [1], None, "x")] == [True, False, True, False]
    # a constraint or a type the readers do not know: the model decides, for every value
    even, mapping = step_schema.field_check(_Changed, "even"), step_schema.field_check(_Changed, "mapping")
    assert not any(even(p) or mapping(p) for p in (*_PROBES, 2, {"a": 1}))


def test_an_operation_outside_the_literal_is_refused_by_the_model_and_the_fast_path_alike() -> None:
    with pytest.raises(ValidationError):
        GenAIAttributes(operation_name="embeddings")  # type: ignore[arg-type]
    assert "embeddings" not in step_schema.OPERATIONS


def test_the_models_write_a_float_that_is_not_finite_as_the_fast_path_is_told_to() -> None:
    sampling = SamplingParams(temperature=float("inf"))
    model_bytes = sampling.__pydantic_serializer__.to_json(sampling, exclude_none=True)
    plain_bytes = pydantic_core.to_json({"temperature": float("inf")}, inf_nan_mode=step_schema.INF_NAN_MODE)
    assert model_bytes == plain_bytes
