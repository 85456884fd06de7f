"""Finds PII spans in one text: prefilter, content-hash cache, then Presidio on the recognizers that apply.

Where it departs from calling ``AnalyzerEngine.analyze`` per text: one multi-pattern scan of the text
(``TriggerScan``) picks the recognizers whose trigger occurs in it, and each of those recognizers' ``may_match``
decides then whether it could find anything (most agent text skips most recognizers, many texts skip
Presidio entirely); only the recognizers that pass run, with empty NLP artifacts, through
``RecognizerRunner`` (``AnalyzerEngine.analyze``'s steps and results, without its per-call overhead);
the spaCy model reads only the lines that hold a name candidate (two capitalised words in a row, or a
salutation before one) that no cue or key recognizer has already explained, never a whole tool output,
so NER costs what the unexplained names in a text cost. ``prefetch`` analyses all texts of an event
first and hands the model every window of all of them in one batch (one pass of the model per event,
not one call per text: a call costs about as much as the tokens of a short line); each text's findings
are those it gets when analysed alone. Overlapping spans of different types
are resolved here once (secrets win, then score, then length) and the result is cached by content hash.
``key = value`` pairs written in the text (config lines, headers, CSV cells under their header) whose
key names a secret or a PII kind are analysed once more on their own, with the key as context, as the
values of a JSON payload are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

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
        self._ner_recognizers = {
            lang: [
                r
                for r in engines.recognizers
                if isinstance(r, SpacyRecognizer) and r.supported_language == lang
            ]
            for lang in self.languages
        }
        self._prefetched: dict[bytes, tuple[Finding, ...]] = {}
        self._by_language = {
            lang: [r for r in engines.recognizers if r.supported_language == lang] for lang in self.languages
        }
        self._scans = {lang: TriggerScan(self._by_language[lang]) for lang in self.languages}
        # (recognizer, has a prefilter, is the NER model's) by registry index: decided once, not per text
        self._kinds = {
            lang: [
                (r, isinstance(r, Prefiltered), isinstance(r, SpacyRecognizer))
                for r in self._by_language[lang]
            ]
            for lang in self.languages
        }
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
        ready = self._prefetched.pop(key, None)
        if ready is not None:  # analysed by ``prefetch`` for this event: fresh, not a cache hit
            self.cache.misses += 1
            self.cache.put(key, ready)
            return ready, False
        cached = self.cache.get(key)
        if cached is not None:
            return cached, True
        if self._ner:
            findings = self._run([self._start(text, ctx, key, {})])[0]
        else:  # no model to batch for: the pattern pass, then each keyed span's text on its own
            found = [f for part in self._patterns(text, list(ctx) if ctx else None) for f in part]  # type: ignore[union-attr]
            for span in keyed_spans(text) if len(text) > 3 else ():
                sub, _ = self.analyze(text[span.start : span.end], [span.key])
                found.extend(f._replace(start=f.start + span.start, end=f.end + span.start) for f in sub)
            findings = resolve_overlaps(found, self.threshold)
        self.cache.put(key, findings)
        return findings, False

    @property
    def batches_ner(self) -> bool:
        """Whether the NER model is in use, so that reading an event's texts in one batch pays."""
        return bool(self._ner)

    def prefetch(self, items: list[tuple[str, list[str] | None]]) -> None:
        """Analyse every not yet cached text of ``items`` (an event's texts with their keys) at once: the
        pattern pass text by text, then one pass of the NER model over the windows of all of them. The
        next ``analyze`` of each text returns these findings as fresh; ``forget_prefetched`` drops any
        left over."""
        jobs: dict[bytes, _Job] = {}
        for text, context in items:
            if not text:
                continue
            ctx = tuple(context) if context else None
            key = cache_key(text, ctx)
            if key in jobs or key in self._prefetched or key in self.cache:
                continue
            jobs[key] = self._start(text, ctx, key, jobs)
        top = [j for j in jobs.values() if j.top]
        for job, findings in zip(top, self._run(top), strict=True):
            self._prefetched[job.key] = findings

    def forget_prefetched(self) -> None:
        self._prefetched.clear()

    def _start(self, text: str, ctx: tuple[str, ...] | None, key: bytes, jobs: dict[bytes, _Job]) -> _Job:
        """The pattern pass of ``text`` and of its ``key = value`` spans; the NER windows left to read."""
        job = _Job(key, text, self._patterns(text, list(ctx) if ctx else None), [], top=True)
        jobs[key] = job
        for span in keyed_spans(text) if len(text) > 3 else ():
            sub_text = text[span.start : span.end]
            sub_key = cache_key(sub_text, (span.key,))
            sub: _Job | tuple[Finding, ...] | None = jobs.get(sub_key) or self.cache.get(sub_key)
            if sub is None:
                sub = self._start(sub_text, (span.key,), sub_key, jobs)
                sub.top = False
            job.subs.append((span.start, sub))
        return job

    def _run(self, jobs: list[_Job]) -> list[tuple[Finding, ...]]:
        """Read every window the jobs left in one batch per language, then finish each job."""
        asks: dict[tuple[str, str], list[Finding]] = {}
        for job in _walk(jobs):
            for part in job.parts:
                if isinstance(part, _Ask):
                    for s, e in part.windows:
                        asks.setdefault((part.lang, job.text[s:e]), [])
        self._read(asks)
        done: dict[bytes, tuple[Finding, ...]] = {}
        return [_finish(job, asks, done, self) for job in jobs]

    def _read(self, asks: dict[tuple[str, str], list[Finding]]) -> None:
        """The NER model's findings in each (language, window) of ``asks``: one batch per language."""
        for lang in self.languages:
            windows = [w for (lg, w) in asks if lg == lang]
            if not windows:
                continue
            recs = self._ner_recognizers[lang]
            batch = self.engines.analyzer.nlp_engine.process_batch(windows, lang, batch_size=len(windows))
            for window, (_, artifacts) in zip(windows, batch, strict=True):
                self.ner_windows += 1
                asks[(lang, window)] = [
                    Finding(r.entity_type, r.start, r.end, r.score, rec.name)
                    for rec in recs
                    for r in rec.analyze(window, list(self._ner), artifacts)
                    if r.score >= self.floor
                ]

    def _patterns(self, text: str, context: list[str] | None) -> list[list[Finding] | _Ask]:
        """Pattern recognizers on the whole text (no NLP), and the lines the NER model is to read (those
        that may name someone), per language."""
        parts: list[list[Finding] | _Ask] = []
        found: list[Finding] = []
        for lang in self.languages:
            entities: list[str] = []
            picked: list[EntityRecognizer] = []
            ner = False
            kinds = self._kinds[lang]
            for i in self._scans[lang].candidates(text, context):
                r, prefiltered, spacy = kinds[i]
                if prefiltered and not r.may_match(text, context):  # type: ignore[attr-defined]
                    continue
                if spacy:
                    ner = True
                else:
                    picked.append(r)
                    entities.extend(e for e in r.supported_entities if e not in entities)
            own: list[Finding] = []
            if entities:  # only the recognizers that may match: another of the same entity cannot
                results = self._runners[lang].run_on(text, picked, entities, context, self.floor)
                for r in results:
                    if (
                        r.entity_type in self._ner
                        and r.recognition_metadata.get("recognizer_name") in self._spacy_names
                    ):
                        continue
                    meta = r.recognition_metadata or {}
                    own.append(
                        Finding(r.entity_type, r.start, r.end, r.score, meta.get("recognizer_name", ""))
                    )
            found += own
            parts.append(own)
            # windows are disjoint, so what the model finds in one never explains another: all are picked
            # first and read in one batch (one pass of the model over them, not one call per line)
            windows = [w for w in ner_windows(text) if not _explained(text, *w, found)] if ner else []
            if not windows:
                continue
            ask = _Ask(lang, windows)
            if len(self.languages) > 1:  # a later language's windows see this one's names: read now
                ask_found = self._read_now(text, ask)
                found += ask_found
                parts.append(ask_found)
            else:
                parts.append(ask)
        return parts

    def _read_now(self, text: str, ask: _Ask) -> list[Finding]:
        asks: dict[tuple[str, str], list[Finding]] = {(ask.lang, text[s:e]): [] for s, e in ask.windows}
        self._read(asks)
        return _ask_findings(text, ask, asks)


class _Ask(NamedTuple):
    """Windows of a text (its line ranges) for the NER model of ``lang``."""

    lang: str
    windows: list[tuple[int, int]]


@dataclass
class _Job:
    """One text's analysis in progress: pattern findings and NER asks in order, then its keyed spans."""

    key: bytes
    text: str
    parts: list[list[Finding] | _Ask]
    subs: list[tuple[int, _Job | tuple[Finding, ...]]] = field(default_factory=list)
    top: bool = True


def _walk(jobs: list[_Job]) -> list[_Job]:
    out: list[_Job] = []
    stack = list(jobs)
    while stack:
        job = stack.pop()
        out.append(job)
        stack.extend(sub for _, sub in job.subs if isinstance(sub, _Job))
    return out


def _ask_findings(text: str, ask: _Ask, asks: dict[tuple[str, str], list[Finding]]) -> list[Finding]:
    """The model's findings in the windows of ``ask``, placed in ``text``."""
    return [
        f._replace(start=s + f.start, end=s + f.end)
        for s, e in ask.windows
        for f in asks[(ask.lang, text[s:e])]
    ]


def _finish(
    job: _Job,
    asks: dict[tuple[str, str], list[Finding]],
    done: dict[bytes, tuple[Finding, ...]],
    an: TextAnalyzer,
) -> tuple[Finding, ...]:
    """A job's findings: its own in the order they were found, then its keyed spans', overlaps resolved
    and cached (as ``analyze`` would have, text by text)."""
    if job.key in done:
        return done[job.key]
    found: list[Finding] = []
    for part in job.parts:
        if isinstance(part, _Ask):
            found.extend(_ask_findings(job.text, part, asks))
        else:
            found.extend(part)
    for offset, sub in job.subs:
        sub_found = _finish(sub, asks, done, an) if isinstance(sub, _Job) else sub
        found.extend(f._replace(start=f.start + offset, end=f.end + offset) for f in sub_found)
    findings = resolve_overlaps(found, an.threshold)
    done[job.key] = findings
    if not job.top:  # a keyed span's text, cached under its key as ``analyze`` does
        an.cache.put(job.key, findings)
    return findings


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
