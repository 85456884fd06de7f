"""An event's texts are analysed together: the NER model reads all their windows in one batch, and every
text comes out as it does when redacted on its own (same findings, same placeholders, same report)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from governance.config import RedactionConfig
from governance.redaction import Redactor
from sluice.events import Message, Observation, StepEvent

_TEXTS = [
    "Olu Adeyemi and Tom Ellis reviewed it in Lisbon.",
    "Our auditor Helga Brandt flagged two entries.",
    '{"customer_name": "Ana Souza", "note": "Call Priya Raman at +44 20 7946 0958"}',
    "Our designer Ines Duarte shipped the mockups; mail ines.duarte@example.com.",
    "exit code 0; 3 passed",
]


def _step(texts: list[str]) -> StepEvent:
    messages = [Message(role="user" if i % 2 == 0 else "assistant", content=t) for i, t in enumerate(texts)]
    return StepEvent(
        trajectory_id="t-batch", tenant="acme", step_index=0, observation=Observation(messages=messages)
    )


@contextmanager
def model_calls(redactor: Redactor) -> Iterator[list[int]]:
    """The sizes of the batches the real NER model is called with while inside."""
    engine = redactor.engines.analyzer.nlp_engine
    batches: list[int] = []
    real = engine.process_batch

    def counted(texts, *args, **kwargs):  # the real model, its calls counted
        batches.append(len(texts))
        return real(texts, *args, **kwargs)

    engine.process_batch = counted
    try:
        yield batches
    finally:
        del engine.process_batch


def test_event_texts_read_by_the_model_in_one_batch(redactor_factory: Callable[..., Redactor]) -> None:
    ner = redactor_factory(ner=True, hash_key="k")
    windows = ner.analyzer.ner_windows
    with model_calls(ner) as batches:
        event, state = ner.redact_event(_step(_TEXTS))
    assert len(batches) == 1 and batches[0] == ner.analyzer.ner_windows - windows >= 2
    texts = [m.content for m in event.observation.messages]
    for name in ("Adeyemi", "Tom Ellis", "Lisbon", "Helga", "Ana Souza", "Priya", "Duarte"):
        assert all(name not in t for t in texts), name
    assert texts[-1] == "exit code 0; 3 passed"

    # the same texts one by one, through a redactor of the same settings: same output, same report
    alone = Redactor.from_config(RedactionConfig(ner=True, hash_key="k"))
    expected, one_state = [], None
    for t in _TEXTS:
        out, one_state, _ = alone.redact_payload(t, one_state)
        expected.append(out)
    assert texts == expected
    assert state.model_dump() == one_state.model_dump()
    report = event.governance.redaction_report
    assert report.analysed_texts + report.cached_texts > 0 and report.entities["PERSON"] >= 5


def test_pattern_only_redactor_reads_texts_one_by_one(redactor_factory: Callable[..., Redactor]) -> None:
    plain = redactor_factory(hash_key="k")
    assert not plain.analyzer.batches_ner
    event, _ = plain.redact_event(_step(["mail ana@example.com", "Kenji Watanabe"]))
    assert [m.content for m in event.observation.messages] == ["mail <EMAIL_ADDRESS_1>", "Kenji Watanabe"]


def _events() -> list[StepEvent]:
    """Two trajectories interleaved, the second step of each repeating a text of its first."""
    return [
        _step(_TEXTS[:2]).model_copy(update={"trajectory_id": "t-a"}),
        _step(_TEXTS[2:4]).model_copy(update={"trajectory_id": "t-b"}),
        _step([_TEXTS[1], "Then Rosa Lindqvist called from +1 (415) 555-0199."]).model_copy(
            update={"trajectory_id": "t-a", "step_index": 1}
        ),
        _step([_TEXTS[3], _TEXTS[4]]).model_copy(update={"trajectory_id": "t-b", "step_index": 1}),
    ]


def test_events_arriving_together_read_by_the_model_in_one_batch() -> None:
    batched = Redactor.from_config(RedactionConfig(ner=True, hash_key="k"))
    events = _events()
    states: dict = {}
    with model_calls(batched) as batches:
        outs = batched.redact_many(events, states)
    assert len(batches) == 1 and batches[0] >= 2

    # event by event, through a redactor of the same settings: same events, reports and states
    alone = Redactor.from_config(RedactionConfig(ner=True, hash_key="k"))
    one_states: dict = {}
    for event, out in zip(events, outs, strict=True):
        expected, one_states[event.trajectory_id] = alone.redact_event(
            event, one_states.get(event.trajectory_id)
        )
        assert out.model_dump() == expected.model_dump()
    assert {k: s.model_dump() for k, s in states.items()} == {
        k: s.model_dump() for k, s in one_states.items()
    }
    texts = " ".join(m.content for out in outs for m in out.observation.messages)
    for name in ("Adeyemi", "Helga", "Rosa", "Lindqvist", "Duarte", "555-0199"):
        assert name not in texts, name
    assert outs[2].governance.redaction_report.cached_texts == 1  # the repeated text: analysed once


def test_a_failing_event_comes_back_as_its_error(redactor_factory: Callable[..., Redactor]) -> None:
    ner = redactor_factory(ner=True, hash_key="k")
    events = _events()
    events[1] = events[1].model_copy(update={"event_type": "dead_letter"})
    states: dict = {}
    outs = ner.redact_many(events, states)
    assert isinstance(outs[1], Exception) and not isinstance(outs[0], Exception)
    assert "Adeyemi" not in outs[0].observation.messages[0].content
    assert set(states) == {"t-a", "t-b"}  # t-b's second step still redacted, from a new state
