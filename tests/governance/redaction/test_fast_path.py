"""What ``TextAnalyzer.analyze`` finds equals what asking every recognizer finds, on every evaluation text.

The fast path (one trigger scan per text, the API-token gate on runs of token characters, ``key = value``
pairs scanned only on the lines that hold a key naming something) is compared with the full path written
out here: every pattern recognizer asked about the whole text (its own ``may_match``, where a recognizer
has one, is part of what it decides; the API-token recognizer, whose gate only saves time, is asked
whatever its gate says) through ``RecognizerRunner`` (``AnalyzerEngine.analyze``'s steps), and every pair
shape scanned over the whole text, each keyed value analysed the same full way, overlaps resolved as
``analyze`` resolves them. The texts are those of the speed-gate and trigger-scan corpora (both draws of
the independent set, the tuning set, the benchmark trajectories with their JSON leaves, the held-out PII
corpus, edge texts, upper- and title-cased copies), each with and without a JSON key.
"""

from __future__ import annotations

from collections.abc import Callable

from governance.redaction import Redactor, key_context, keyed_spans
from governance.redaction.analysis_cache import Finding
from governance.redaction.key_context import code_or_placeholder, names_anything
from governance.redaction.recognizers.api_token_recognizer import ApiTokenRecognizer
from governance.redaction.recognizers.base import Prefiltered
from governance.redaction.text_analyzer import TextAnalyzer, resolve_overlaps
from tests.governance.redaction.test_trigger_scan import CONTEXTS, texts

NAMING_EDGE_TEXTS = [
    "pass_word = hunter2!x",  # a joined secret word, split by "_"
    "Mot-De-Passe: Fr8hling!2024",
    "dbPassWord='S3cr3t!x'",
    "x.API.key = Zx9Qw8Er7Ty6Ui5Op4As3",
    'headers: {"X-Auth-Token": "tok_9f8a7b6c5d4e3f2a1b"}',
    "server = 10.0.0.12\nclient_ip = 10.0.0.13\nPGPASSWORD=pg!pass99",
    "CONTACT_PHONE:+44 20 7946 0958",
    "contraseña = Cl4ve!segura",  # not ASCII: every line with "=" or ":" is scanned
]


def _keyed_whole_text(text: str) -> list[keyed_spans.KeyedSpan]:
    """``keyed_spans`` with every pair shape scanned over the whole text, then XML, CSV, table and SQL cells."""
    spans: dict[tuple[int, int], str] = {}
    for rx, _ in keyed_spans._PAIR_SHAPES:
        for m in rx.finditer(text):
            start, end = m.span("v")
            if end > start and names_anything(m["k"]) and not code_or_placeholder(m["v"]):
                spans.setdefault((start, end), m["k"])
    for m in keyed_spans._XML_ELEMENT.finditer(text):
        if names_anything(m["k"]) and not code_or_placeholder(m["v"]):
            spans.setdefault(m.span("v"), m["k"])
    cells = keyed_spans.csv_cells(text) + keyed_spans.table_cells(text)
    cells += [keyed_spans.KeyedSpan(k, s, e) for k, s, e in keyed_spans.sql_cells(text) if names_anything(k)]
    spans.update({(s, e): k for k, s, e in cells if (s, e) not in spans})
    return [keyed_spans.KeyedSpan(k, s, e) for (s, e), k in sorted(spans.items())]


def _full(analyzer: TextAnalyzer, text: str, context: list[str] | None) -> tuple[Finding, ...]:
    """Every recognizer on the whole text, then every keyed value the same way, overlaps resolved."""
    runner = analyzer._runners["en"]
    asked = [
        r
        for r in runner.recognizers
        if isinstance(r, ApiTokenRecognizer) or not isinstance(r, Prefiltered) or r.may_match(text, context)
    ]
    entities = list(dict.fromkeys(e for r in asked for e in r.supported_entities))
    found = [
        Finding(
            r.entity_type, r.start, r.end, r.score, (r.recognition_metadata or {}).get("recognizer_name", "")
        )
        for r in runner.run_on(text, asked, entities, context, analyzer.floor)
    ]
    for span in _keyed_whole_text(text) if len(text) > 3 else ():
        sub = _full(analyzer, text[span.start : span.end], [span.key])
        found.extend(f._replace(start=f.start + span.start, end=f.end + span.start) for f in sub)
    return resolve_overlaps(found, analyzer.threshold)


def test_fast_path_finds_what_every_recognizer_finds(redactor_factory: Callable[..., Redactor]) -> None:
    analyzer = redactor_factory(hash_key="test-hash-key", cache_size=0).analyzer
    differing: list[tuple[str, list[str] | None]] = []
    found = 0
    for n, text in enumerate((*texts(), *NAMING_EDGE_TEXTS)):
        context = CONTEXTS[n % len(CONTEXTS)]
        for ctx in (None, context) if context else (None,):
            fast, _ = analyzer.analyze(text, ctx)
            if fast != _full(analyzer, text, ctx):
                differing.append((text[:160], ctx))
            found += bool(fast)
    assert differing == []
    assert found > 1000  # the corpora do carry values to find


def test_naming_key_lines_hold_every_key_that_names_something() -> None:
    """The lines the pair shapes are scanned on hold every key that names something (the edge texts)."""
    for text in NAMING_EDGE_TEXTS:
        fast = keyed_spans.keyed_spans(text)
        assert fast == _keyed_whole_text(text)
        assert fast and all(key_context.names_anything(s.key) for s in fast), text
