"""Finds PII spans in one text: prefilter, content-hash cache, then Presidio on the recognizers that apply.

Where it departs from calling ``AnalyzerEngine.analyze`` per text: each recognizer's ``may_match``
decides first whether it could find anything (most agent text skips most recognizers, many texts skip
Presidio entirely); only the entity types that pass are handed to Presidio; spaCy runs only when a NER
recognizer applies (otherwise Presidio gets empty NLP artifacts); overlapping spans of different types
are resolved here once (secrets win, then score, then length) and the result is cached by content hash.
"""

from __future__ import annotations

from governance.config import RedactionConfig
from governance.redaction.analysis_cache import AnalysisCache, Finding, cache_key
from governance.redaction.engine_provider import Engines
from governance.redaction.recognizers import SECRET_ENTITIES
from governance.redaction.recognizers.base import Prefiltered

_SECRETS = frozenset(SECRET_ENTITIES)
_GENERIC = frozenset({"CREDENTIAL"})  # loses a tie to a specific type (a Stripe key under "api_key")


def resolve_overlaps(findings: list[Finding], threshold: float) -> tuple[Finding, ...]:
    """Non-overlapping findings in text order.

    Priority: redactable before residual, secrets before other types, specific before generic
    (``STRIPE_KEY`` over ``CREDENTIAL``), then score, then length.
    """
    if len(findings) < 2:
        return tuple(findings)
    ranked = sorted(
        findings,
        key=lambda f: (
            f.score >= threshold,
            f.entity_type in _SECRETS,
            f.entity_type not in _GENERIC,
            f.score,
            f.end - f.start,
        ),
        reverse=True,
    )
    kept: list[Finding] = []
    for f in ranked:
        if all(f.end <= k.start or f.start >= k.end for k in kept):
            kept.append(f)
    return tuple(sorted(kept, key=lambda f: f.start))


class TextAnalyzer:
    """Analysis of single texts with caching; one per process (not thread-safe, not thread-parallel)."""

    def __init__(self, engines: Engines, cfg: RedactionConfig) -> None:
        self.engines = engines
        self.threshold = cfg.score_threshold
        self.floor = cfg.residual_threshold if cfg.residual_threshold is not None else cfg.score_threshold
        self.cache = AnalysisCache(cfg.cache_size)
        self.languages = list(cfg.languages)
        self._ner = frozenset(engines.ner_entities)
        self._by_language = {
            lang: [r for r in engines.recognizers if r.supported_language == lang] for lang in self.languages
        }

    def analyze(self, text: str, context: list[str] | None = None) -> tuple[tuple[Finding, ...], bool]:
        """Findings of ``text`` (scored at least the residual floor) and whether they came from the cache."""
        ctx = tuple(context) if context else None
        key = cache_key(text, ctx)
        cached = self.cache.get(key)
        if cached is not None:
            return cached, True
        findings = self._analyze(text, list(ctx) if ctx else None)
        self.cache.put(key, findings)
        return findings, False

    def _analyze(self, text: str, context: list[str] | None) -> tuple[Finding, ...]:
        found: list[Finding] = []
        for lang in self.languages:
            entities: list[str] = []
            for r in self._by_language[lang]:
                if not isinstance(r, Prefiltered) or r.may_match(text, context):
                    entities.extend(r.supported_entities)
            if not entities:
                continue
            needs_nlp = not self._ner.isdisjoint(entities)
            results = self.engines.analyzer.analyze(
                text,
                language=lang,
                entities=entities,
                context=context,
                score_threshold=self.floor,
                nlp_artifacts=None if needs_nlp else self.engines.empty_artifacts[lang],
            )
            for r in results:
                meta = r.recognition_metadata or {}
                found.append(Finding(r.entity_type, r.start, r.end, r.score, meta.get("recognizer_name", "")))
        return resolve_overlaps(found, self.threshold)
