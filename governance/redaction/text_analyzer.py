"""Finds PII spans in one text: prefilter, content-hash cache, then Presidio on the recognizers that apply.

Where it departs from calling ``AnalyzerEngine.analyze`` per text: one multi-pattern scan of the text
(``TriggerScan``) picks the recognizers whose trigger occurs in it, and each of those recognizers' ``may_match``
decides then whether it could find anything (most agent text skips most recognizers, many texts skip
Presidio entirely); only the recognizers of the entity types that pass run, with empty NLP artifacts,
through ``RecognizerRunner`` (``AnalyzerEngine.analyze``'s steps and results, without its per-call
overhead); the spaCy model reads only the lines that hold a name candidate, all of a text's in one batch (two capitalised words in a row, or a
salutation before one) that no cue or key recognizer has already explained, never a whole tool output,
so NER costs what the unexplained names in a text cost; overlapping spans of different types
are resolved here once (secrets win, then score, then length) and the result is cached by content hash.
``key = value`` pairs written in the text (config lines, headers, CSV cells under their header) whose
key names a secret or a PII kind are analysed once more on their own, with the key as context, as the
values of a JSON payload are.
"""

from __future__ import annotations

from presidio_analyzer import EntityRecognizer
from presidio_analyzer.predefined_recognizers import SpacyRecognizer

from governance.config import RedactionConfig
from governance.redaction.analysis_cache import AnalysisCache, Finding, cache_key
from governance.redaction.engine_provider import Engines
from governance.redaction.keyed_spans import keyed_spans
from governance.redaction.recognizer_runner import RecognizerRunner
from governance.redaction.recognizers import SECRET_ENTITIES
from governance.redaction.recognizers.base import Prefiltered
from governance.redaction.recognizers.person_location_recognizer import NAME_CANDIDATE
from governance.redaction.trigger_scan import TriggerScan

_SECRETS = frozenset(SECRET_ENTITIES)
_GENERIC = frozenset(
    {"CREDENTIAL", "API_TOKEN"}
)  # lose a tie to a specific type (a Stripe key under "api_key")


def resolve_overlaps(findings: list[Finding], threshold: float) -> tuple[Finding, ...]:
    """Non-overlapping findings in text order.

    Priority: redactable before residual, secrets before other types, specific before generic
    (``STRIPE_KEY`` over ``CREDENTIAL``), then score, then length; on a tie a national identifier of a
    named country (``US_SSN``) over ``NATIONAL_ID``.
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
            f.entity_type != "NATIONAL_ID",
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
        self.ner_windows = 0
        self._spacy_names = frozenset(r.name for r in engines.recognizers if isinstance(r, SpacyRecognizer))
        self._by_language = {
            lang: [r for r in engines.recognizers if r.supported_language == lang] for lang in self.languages
        }
        self._scans = {lang: TriggerScan(self._by_language[lang]) for lang in self.languages}
        self._runners = {
            lang: RecognizerRunner(
                self._by_language[lang],
                engines.analyzer.context_aware_enhancer,
                engines.empty_artifacts[lang],
            )
            for lang in self.languages
        }

    def analyze(self, text: str, context: list[str] | None = None) -> tuple[tuple[Finding, ...], bool]:
        """Findings of ``text`` (scored at least the residual floor) and whether they came from the cache."""
        ctx = tuple(context) if context else None
        key = cache_key(text, ctx)
        cached = self.cache.get(key)
        if cached is not None:
            return cached, True
        found = self._analyze(text, list(ctx) if ctx else None)
        for span in keyed_spans(text) if len(text) > 3 else ():
            sub, _ = self.analyze(text[span.start : span.end], [span.key])
            found.extend(f._replace(start=f.start + span.start, end=f.end + span.start) for f in sub)
        findings = resolve_overlaps(found, self.threshold)
        self.cache.put(key, findings)
        return findings, False

    def _analyze(self, text: str, context: list[str] | None) -> list[Finding]:
        """Pattern recognizers on the whole text (no NLP), then the NER model on the lines that may name someone."""
        found: list[Finding] = []
        for lang in self.languages:
            entities: list[str] = []
            ner: list[EntityRecognizer] = []
            recognizers = self._by_language[lang]
            for i in self._scans[lang].candidates(text, context):
                r = recognizers[i]
                if isinstance(r, Prefiltered) and not r.may_match(text, context):
                    continue
                if isinstance(r, SpacyRecognizer):
                    ner.append(r)
                else:
                    entities.extend(e for e in r.supported_entities if e not in entities)
            if entities:
                results = self._runners[lang].run(text, entities, context, self.floor)
                for r in results:
                    if (
                        r.entity_type in self._ner
                        and r.recognition_metadata.get("recognizer_name") in self._spacy_names
                    ):
                        continue
                    meta = r.recognition_metadata or {}
                    found.append(
                        Finding(r.entity_type, r.start, r.end, r.score, meta.get("recognizer_name", ""))
                    )
            # windows are disjoint, so what the model finds in one never explains another: all are picked
            # first and read in one batch (one pass of the model over them, not one call per line)
            windows = [w for w in ner_windows(text) if not _explained(text, *w, found)] if ner else []
            if not windows:
                continue
            batch = self.engines.analyzer.nlp_engine.process_batch(
                [text[s:e] for s, e in windows], lang, batch_size=len(windows)
            )
            for (start, _), (window, artifacts) in zip(windows, batch, strict=True):
                self.ner_windows += 1
                for rec in ner:
                    for r in rec.analyze(window, list(self._ner), artifacts):
                        if r.score >= self.floor:
                            found.append(
                                Finding(r.entity_type, start + r.start, start + r.end, r.score, rec.name)
                            )
        return found


def _explained(text: str, start: int, end: int, found: list[Finding]) -> bool:
    """Every name candidate of the window lies inside a PERSON the cue or key recognizers already found
    (``Dear Ana Souza``, ``{"customer_name": "Ana Souza"}``): the model could only tell us again."""
    persons = [(f.start, f.end) for f in found if f.entity_type == "PERSON"]
    if not persons:
        return False
    for m in NAME_CANDIDATE.finditer(text, start, end):
        if not any(s <= m.start() and m.end() <= e for s, e in persons):
            return False
    return True


def ner_windows(text: str) -> list[tuple[int, int]]:
    """Line ranges that hold a name candidate (consecutive lines merged): all the NER model ever reads."""
    windows: list[tuple[int, int]] = []
    for m in NAME_CANDIDATE.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        if windows and start <= windows[-1][1] + 1:
            windows[-1] = (windows[-1][0], max(end, windows[-1][1]))
        else:
            windows.append((start, end))
    return windows
