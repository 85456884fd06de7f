"""The redaction stage's decision: ``Redactor.redact_data(data, state) -> (new_event, new_state)``.

Pure logic (no Faust, no Kafka): the redact stage's Faust agent keeps one ``Redactor`` per process
and the ``PlaceholderState`` of each trajectory in a table. Engines are built once in ``from_config``.
``redact_data`` takes an event's JSON object as decoded from the wire, walks it once in place and
validates the result once into its model; ``redact_event`` does the same for an event already built
(on its dump) and leaves it untouched. The input state is never changed: the new one is returned.

    from governance.redaction import Redactor, PlaceholderState
    redactor = Redactor.from_config(cfg.redaction)
    new_event, new_state = redactor.redact_data(json.loads(raw), state)   # state None = new trajectory
    new_event, new_state = redactor.redact_event(event, state)
    outs = redactor.redact_many(events, states)   # events arriving together: one NER pass for all
    with redactor.batch(datas): ...redactor.redact_data(d, state) for d in datas  # the same, on wire objects
    text, state, counts = redactor.redact_text("mail bob@example.com", state)
    withheld = redactor.withhold(event, "timeout")                   # fail closed: no text at all
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel

from governance.config import RedactionConfig
from governance.redaction.engine_provider import Engines, build_engines
from governance.redaction.event_fields import walk_end, walk_reward, walk_step
from governance.redaction.exceptions import RedactionError
from governance.redaction.keyed_hash import KeyedHasher
from governance.redaction.operators import OperatorContext, OperatorTable
from governance.redaction.recognizers import family_of
from governance.redaction.redaction_pass import CollectPass, RedactionPass, WithholdPass
from governance.redaction.state import PlaceholderState
from governance.redaction.text_analyzer import TextAnalyzer
from sluice.events import RedactionReport, RewardEvent, StepEvent, TrajectoryEndEvent

log = logging.getLogger(__name__)
E = TypeVar("E", StepEvent, TrajectoryEndEvent, RewardEvent)

_WALKERS: dict[str, tuple[type[BaseModel], Callable[[RedactionPass, dict[str, Any]], None]]] = {
    "step": (StepEvent, walk_step),
    "end": (TrajectoryEndEvent, walk_end),
}
REDACTABLE_EVENT_TYPES = frozenset({*_WALKERS, "reward"})


def config_fingerprint(cfg: RedactionConfig) -> str:
    """``config_version`` plus a short hash of the settings in effect (the hash key excluded)."""
    body = cfg.model_dump_json(exclude={"hash_key", "cache_size"})
    return f"{cfg.config_version}-{hashlib.sha256(body.encode()).hexdigest()[:8]}"


class Redactor:
    """Redacts events and texts; one per process, safe to call many times per second (not thread-parallel)."""

    def __init__(self, cfg: RedactionConfig, engines: Engines) -> None:
        self.config = cfg
        self.engines = engines
        self.analyzer = TextAnalyzer(engines, cfg)
        families = {e: family_of(e) for e in engines.entities}
        self.operators = OperatorTable(cfg, families)
        self.hasher = KeyedHasher(cfg.hash_key.get_secret_value().encode())
        self.recognizer_version = engines.recognizer_version
        self.config_version = config_fingerprint(cfg)
        self._phone_region = cfg.phone_regions[0] if cfg.phone_regions else "US"
        self._batch_open = False

    @classmethod
    def from_config(cls, cfg: RedactionConfig) -> Redactor:
        """Build the engines once (a few seconds with NER, well under one without)."""
        if cfg.hash_key.get_secret_value() == "change-me":
            log.warning("redaction.hash_key is the built-in default: set a secret (SLUICE_HASH_KEY)")
        return cls(cfg, build_engines(cfg))

    @property
    def entities(self) -> tuple[str, ...]:
        return self.engines.entities

    def _pass(self, state: PlaceholderState | None) -> RedactionPass:
        work = state.copy_for_update() if state is not None else PlaceholderState()
        ctx = OperatorContext(work, self.hasher, self._phone_region)
        return RedactionPass(
            self.analyzer, self.operators, ctx, self.config.score_threshold, self.config.step_timeout_s
        )

    def _redact_one(
        self, text: str, state: PlaceholderState | None, context: list[str] | str | None, walk_json: bool
    ) -> tuple[str, PlaceholderState, Counter[str]]:
        p = self._pass(state)
        ctx = [context] if isinstance(context, str) else context
        out = p.payload(text, ctx) if walk_json else p.text(text, ctx)
        return out, p.ctx.state, p.redacted

    def redact_text(
        self, text: str, state: PlaceholderState | None = None, context: list[str] | str | None = None
    ) -> tuple[str, PlaceholderState, Counter[str]]:
        """Redact one plain text (no JSON walking); ``context`` words are e.g. the JSON key it came from."""
        return self._redact_one(text, state, context, walk_json=False)

    def redact_payload(
        self, text: str, state: PlaceholderState | None = None, context: list[str] | str | None = None
    ) -> tuple[str, PlaceholderState, Counter[str]]:
        """Like ``redact_text`` but a JSON text is walked value by value with keys as context."""
        return self._redact_one(text, state, context, walk_json=True)

    def redact_data(
        self, data: dict[str, Any], state: PlaceholderState | None = None
    ) -> tuple[StepEvent | TrajectoryEndEvent | RewardEvent, PlaceholderState]:
        """The event of ``data`` (a decoded wire object, changed in place) with every text redacted and
        its redaction report, validated once; and the new state.

        Raises ``RedactionError`` for an ``event_type`` that carries no redactable text and
        ``pydantic.ValidationError`` when the redacted object is not a valid event. Any other error
        comes from the walk: a redaction failure, or a malformed object the walk could not follow
        (validating the original object tells the two apart)."""
        event_type = data.get("event_type")
        p = self._pass(state)
        if event_type == "reward":
            walk_reward(p, data.get("reward") or {})
            return RewardEvent.model_validate(data), p.ctx.state
        if event_type not in _WALKERS:
            raise RedactionError(f"cannot redact an event of type {event_type!r}")
        model, walker = _WALKERS[event_type]
        if self.analyzer.batches_ner and not self._batch_open:
            with self.batch([data]):  # every text of the event analysed first, the NER model in one batch
                walker(p, data)
        else:
            walker(p, data)
        governance = data.setdefault("governance", {})
        governance["redaction"] = "redacted"
        # the report as the model it is: validation takes an instance of the field's model as it is,
        # rather than dumping the report to a dict here and validating it again there
        governance["redaction_report"] = self.report(p)
        return model.model_validate(data), p.ctx.state  # type: ignore[return-value]

    @contextmanager
    def batch(self, datas: Sequence[dict[str, Any]]) -> Iterator[None]:
        """Within it, the texts of ``datas`` (wire objects about to be redacted, in any number) are already
        analysed: every one not yet cached, in one pass of the pattern recognizers each and one pass of the
        NER model over the windows of all of them (identical texts and windows read once). Each text's
        findings are those it gets alone, and the first ``redact_data`` to meet it counts it analysed, as
        event by event. Without NER nothing is batched: the pattern pass gains nothing from it."""
        if not self.analyzer.batches_ner or self._batch_open:
            yield
            return
        collect = CollectPass()
        for data in datas:
            event_type = data.get("event_type")
            if event_type == "reward":
                walk_reward(collect, data.get("reward") or {})
            elif event_type in _WALKERS:
                _WALKERS[event_type][1](collect, data)
        self._batch_open = True
        try:
            self.analyzer.prefetch(collect.items)
            yield
        finally:
            self._batch_open = False
            self.analyzer.forget_prefetched()

    def redact_many(
        self, events: Sequence[E], states: MutableMapping[str, PlaceholderState]
    ) -> list[E | Exception]:
        """``redact_event`` of each of ``events`` in order, their texts analysed together (``batch``):
        the way to redact events that arrive together. ``states`` maps a trajectory id to its placeholder
        state and is updated as each event is redacted (several events of one trajectory chain). An
        event whose redaction fails comes back as its exception, its trajectory's state left as it was."""
        datas = [e.model_dump() for e in events]
        out: list[E | Exception] = []
        with self.batch(datas):
            for event, data in zip(events, datas, strict=True):
                try:
                    if getattr(event, "event_type", None) not in REDACTABLE_EVENT_TYPES:
                        raise RedactionError(f"cannot redact a {type(event).__name__}")
                    redacted, states[event.trajectory_id] = self.redact_data(
                        data, states.get(event.trajectory_id)
                    )
                except Exception as exc:  # noqa: BLE001 - one event's failure is its own, reported back
                    out.append(exc)
                    continue
                out.append(redacted)  # type: ignore[arg-type]
        return out

    def redact_event(self, event: E, state: PlaceholderState | None = None) -> tuple[E, PlaceholderState]:
        """A new event with every text redacted (and its redaction report), and the new state."""
        if getattr(event, "event_type", None) not in REDACTABLE_EVENT_TYPES:
            raise RedactionError(f"cannot redact a {type(event).__name__}")
        redacted, new_state = self.redact_data(event.model_dump(), state)
        return redacted, new_state  # type: ignore[return-value]

    def withhold(self, event: E, failure: str) -> E:
        """Fail closed: the event with every text replaced by the drop marker and ``failure`` in its report.

        For an event whose redaction raised or timed out: the trajectory keeps its shape (step index,
        ids, metadata), nothing of its text is published, and eligibility keeps it out of training.
        """
        p = WithholdPass(self.config.drop_marker)
        data = event.model_dump()
        if isinstance(event, RewardEvent):
            walk_reward(p, data["reward"])
            return RewardEvent.model_validate(data)
        if event.event_type not in _WALKERS:
            raise RedactionError(f"cannot withhold a {type(event).__name__}")
        _WALKERS[event.event_type][1](p, data)
        data["governance"]["redaction"] = "redacted"
        data["governance"]["redaction_report"] = RedactionReport(
            recognizer_version=self.recognizer_version, config_version=self.config_version, failure=failure
        ).model_dump()
        return type(event).model_validate(data)

    def report(self, p: RedactionPass) -> RedactionReport:
        return RedactionReport(
            entities=dict(sorted(p.redacted.items())),
            recognizer_version=self.recognizer_version,
            config_version=self.config_version,
            cached_texts=p.cached_texts,
            analysed_texts=p.analysed_texts,
            residual=p.residual,
        )
