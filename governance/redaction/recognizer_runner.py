"""Runs the recognizers a text needs, with the result handling of ``AnalyzerEngine.analyze``, once per text.

``AnalyzerEngine.analyze`` costs more per call than most of Sluice's recognizers cost per text: it
looks the recognizers up in the registry (a set built per call), regroups every result per recognizer
twice, deep-copies all results for its lemma context enhancer (which, with the empty NLP artifacts the
pattern pass hands it, can only act on context words from the JSON key) and copies its inputs. This
runner keeps its steps and their order — each recognizer's ``analyze``, the recognizer id added to its
results, each recognizer's ``enhance_using_context`` with its own and the other results, the lemma
enhancer, the score floor, ``EntityRecognizer.remove_duplicates`` — with the lookups built once and the
lemma enhancer called only where it can change a score: there is a context, and a result of a
recognizer that declares context words which no recognizer has already boosted.
"""

from __future__ import annotations

from presidio_analyzer import EntityRecognizer, RecognizerResult
from presidio_analyzer.context_aware_enhancers import ContextAwareEnhancer
from presidio_analyzer.nlp_engine import NlpArtifacts

_ID = RecognizerResult.RECOGNIZER_IDENTIFIER_KEY
_NAME = RecognizerResult.RECOGNIZER_NAME_KEY
_BOOSTED = RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY


class RecognizerRunner:
    """The pattern pass of one language: which recognizers serve an entity, and running them on a text."""

    def __init__(
        self,
        recognizers: list[EntityRecognizer],
        enhancer: ContextAwareEnhancer,
        artifacts: NlpArtifacts,
    ) -> None:
        self.recognizers = recognizers
        self.enhancer = enhancer
        self.artifacts = artifacts
        self._by_entity: dict[str, frozenset[int]] = {}
        for i, r in enumerate(recognizers):
            for e in r.supported_entities:
                self._by_entity[e] = self._by_entity.get(e, frozenset()) | {i}
        # Recognizers whose context words the lemma enhancer reads; with empty NLP artifacts the words
        # around a match are [""], so an empty context can only help a recognizer that lists "" itself.
        self._with_context = frozenset(r.id for r in recognizers if r.context)
        self._empty_word = any("" in (r.context or ()) for r in recognizers)

    def serving(self, entities: list[str]) -> list[EntityRecognizer]:
        """The recognizers of any of ``entities``, in registry order (``RecognizerRegistry.get_recognizers``)."""
        picked: frozenset[int] = frozenset()
        for e in entities:
            picked |= self._by_entity.get(e, frozenset())
        return [self.recognizers[i] for i in sorted(picked)]

    def run(
        self, text: str, entities: list[str], context: list[str] | None, floor: float
    ) -> list[RecognizerResult]:
        """What ``AnalyzerEngine.analyze(text, entities=..., context=..., score_threshold=floor,
        nlp_artifacts=<empty>)`` returns, for the recognizers serving ``entities``."""
        return self.run_on(text, self.serving(entities), entities, context, floor)

    def run_on(
        self,
        text: str,
        recognizers: list[EntityRecognizer],
        entities: list[str],
        context: list[str] | None,
        floor: float,
    ) -> list[RecognizerResult]:
        """``run`` with the recognizers given (in registry order): those of the entities that can find
        anything in ``text``."""
        artifacts = self.artifacts
        raw: list[RecognizerResult] = []
        for rec in recognizers:
            if not rec.is_loaded:
                rec.load()
                rec.is_loaded = True
            found = rec.analyze(text=text, entities=entities, nlp_artifacts=artifacts)
            if found:
                for r in found:
                    if not r.recognition_metadata:
                        r.recognition_metadata = {}
                    r.recognition_metadata.setdefault(_ID, rec.id)
                    r.recognition_metadata.setdefault(_NAME, rec.name)
                raw.extend(found)
        results: list[RecognizerResult] = []
        for rec in recognizers:
            own = [r for r in raw if r.recognition_metadata[_ID] == rec.id] if raw else []
            other = [r for r in raw if r.recognition_metadata[_ID] != rec.id] if raw else []
            results.extend(
                rec.enhance_using_context(
                    text=text,
                    raw_recognizer_results=own,
                    other_raw_recognizer_results=other,
                    nlp_artifacts=artifacts,
                    context=context,
                )
            )
        if (context or self._empty_word) and any(
            (r.recognition_metadata or {}).get(_ID) in self._with_context
            and not r.recognition_metadata.get(_BOOSTED)
            for r in results
        ):
            results = self.enhancer.enhance_using_context(
                text=text,
                raw_results=results,
                nlp_artifacts=artifacts,
                recognizers=recognizers,
                context=context,
            )
        results = [r for r in results if r.score >= floor]
        return EntityRecognizer.remove_duplicates(results) if results else results
