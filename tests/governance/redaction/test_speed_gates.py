"""The shortcuts that make analysis cheap never change what it finds.

Each is checked on every text of both evaluation sets (the independent set, seeds 7331 and 4242; the
tuning set and the agent trajectories the throughput benchmark redacts), with every JSON string leaf
as the analyzer sees it, and on edge cases written here:

- ``has_number_run`` is implied by the card, SSN, phone and IPv4 prefilters it stands in front of;
- ``ApiTokenRecognizer.may_match`` (patterns run line by line, each only where its words occur) passes
  wherever the whole-text patterns find a key-shaped value;
- ``keyed_spans`` (pair shapes scanned only on the lines that can hold them) returns what the
  whole-text scans return;
- ``RecognizerRunner.run`` returns what ``AnalyzerEngine.analyze`` returns for the same recognizers.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from functools import cache

import pytest

from bench.data.agent_trajectories import build_trajectories, step_texts
from bench.data.redaction_eval_set import build_eval_set
from bench.data.unseen_eval_set import build_unseen_set
from governance.redaction import Redactor, key_context, keyed_spans
from governance.redaction.recognizers.api_token_recognizer import ApiTokenRecognizer, key_shaped
from governance.redaction.recognizers.base import Prefiltered, has_number_run
from governance.redaction.recognizers.credential_recognizer import CredentialRecognizer
from governance.redaction.recognizers.ip_address_recognizer import IpAddressRecognizer
from governance.redaction.recognizers.payment_card_recognizer import PaymentCardRecognizer
from governance.redaction.recognizers.phone_number_recognizer import PhoneNumberRecognizer
from governance.redaction.recognizers.us_social_security_recognizer import UsSocialSecurityRecognizer

_TOKEN_PREFILTER = re.compile(r"[A-Za-z0-9_\-+/=.~]{20}")  # 20 characters a token is written with
EDGE_TEXTS = [
    "card 4111 1111 1111 1111 exp 12/29",
    "card 4111-1111-1111-1111",
    "ssn 123.45.6789 and 123 45 6789",
    "call (415) 867-5309 or +44 20 7946 0958 or 020/7946/0958",
    "host 10.0.0.12 and fe80::1ff:fe23:4567:890a",
    "Telefon: ٠١٢٣ ٤٥٦ ٧٨٩٠",  # Arabic-Indic digits are \\d too
    "pin\t1234\t5678\t9012",
    "Authorization: Bearer sk_9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c",
    "token\nabcdef0123456789abcdef0123456789",  # the word and the token on different lines
    "export API_KEY=Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0\r\nnext=1",
    "la clave es 7Hq2Lm9Xv4Rt8Wz1Ny6Bp3Kd5Fs0Gj",
    "Schlüssel: 7Hq2Lm9Xv4Rt8Wz1Ny6Bp3Kd5Fs0Gj",
    "ΤOKEN: 7Hq2Lm9Xv4Rt8Wz1Ny6Bp3Kd5Fs0Gj",  # a Greek capital tau before "OKEN"
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 in the log",
    "SK0123456789abcdef0123456789abcdef and dapi0123456789abcdef0123456789abcdef",
    "password=hunter2\nuser=alice\n\ndb_password: 's3cr3t!'\n",
    'curl -H "X-Api-Key: Zx9Qw8Er7Ty6Ui5Op4As3" "https://x.io/?api_key=abc123&x=1"',
    "name,email,phone\nAna Souza,ana@example.com,+55 11 91234-5678\r\nLi Wei,li@example.cn,138 0013 8000",
    "client_secret = 'abc'  # trailing comment\n  aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "first line\n{'password': 'x1', \"token\": \"y2\"}\nlast=line",
]


def _leaves(obj: object) -> Iterator[str]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield str(k)
            yield from _leaves(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _leaves(v)
    elif isinstance(obj, str):
        yield obj


@cache
def corpus() -> tuple[str, ...]:
    texts: list[str] = []
    for seed in (7331, 4242):
        texts += [t.text for traj in build_unseen_set(seed) for t in traj.turns]
    texts += [c.text for c in build_eval_set(20251102, 120, 40, 600)]
    texts += [t for traj in build_trajectories(20251102, 50) for s in traj for t in step_texts(s)]
    texts += EDGE_TEXTS
    out: dict[str, None] = {}
    for t in texts:
        out[t] = None
        if t.lstrip()[:1] in "{[":
            with contextlib.suppress(ValueError):
                out.update(dict.fromkeys(_leaves(json.loads(t))))
    return tuple(out)


def test_number_run_is_implied_by_every_number_prefilter() -> None:
    prefilters = [
        PaymentCardRecognizer.PREFILTER,
        UsSocialSecurityRecognizer.PREFILTER,
        PhoneNumberRecognizer.PREFILTER,
        IpAddressRecognizer.PREFILTER,
    ]
    assert all(cls.NEEDS_NUMBER_RUN for cls in (PaymentCardRecognizer, UsSocialSecurityRecognizer,
                                                 PhoneNumberRecognizer))  # fmt: skip
    hidden = [t for t in corpus() if not has_number_run(t) and any(p.search(t) for p in prefilters)]
    assert hidden == []
    assert sum(has_number_run(t) for t in corpus()) < len(corpus())  # it does skip texts


def _api_token_whole_text(rec: ApiTokenRecognizer, text: str) -> bool:
    """The gate as it was: whole-text prefilter, trigger words, then every pattern over the whole text."""
    if len(text) < 20 or _TOKEN_PREFILTER.search(text) is None:
        return False
    low = text.lower()
    if not any(t in low for t in rec.LOWER_TRIGGERS):
        return False
    return any(
        key_shaped(text[m.start("v") : m.end("v")]) for _, rx in rec._compiled for m in rx.finditer(text)
    )


def test_api_token_gate_passes_wherever_the_patterns_find_a_token() -> None:
    rec = ApiTokenRecognizer()
    hidden = [t for t in corpus() if _api_token_whole_text(rec, t) and not rec.may_match(t)]
    assert hidden == []
    found = [t for t in EDGE_TEXTS if _api_token_whole_text(rec, t)]
    assert len(found) >= 6 and all(rec.may_match(t) for t in found)
    assert not rec.may_match("token\nabcdef0123456789abcdef0123456789")  # no pattern crosses a line


def _keyed_spans_whole_text(text: str) -> list[keyed_spans.KeyedSpan]:
    """``keyed_spans`` with every pair shape scanned over the whole text."""
    if "=" not in text and ":" not in text and "," not in text and "\t" not in text:
        return []
    spans: dict[tuple[int, int], str] = {}
    for rx, _ in keyed_spans._PAIR_SHAPES:
        for m in rx.finditer(text):
            key = m.group("k")
            start, end = m.span("v")
            if (
                end > start
                and key_context.names_anything(key)
                and not key_context.code_or_placeholder(m.group("v"))
            ):
                spans.setdefault((start, end), key)
    spans.update({(s, e): k for k, s, e in keyed_spans.csv_cells(text) if (s, e) not in spans})
    return [keyed_spans.KeyedSpan(k, s, e) for (s, e), k in sorted(spans.items())]


def test_keyed_spans_line_scan_equals_whole_text_scan() -> None:
    texts = corpus()
    spliced = [
        a[: len(a) // 2] + "\r\n" + b[len(b) // 3 :] for a, b in zip(texts[::7], texts[3::7], strict=False)
    ]
    differing = [t for t in (*texts, *spliced) if keyed_spans.keyed_spans(t) != _keyed_spans_whole_text(t)]
    assert differing == []
    assert sum(bool(keyed_spans.keyed_spans(t)) for t in EDGE_TEXTS) >= 5


@pytest.mark.parametrize("ner", [False, True])
def test_recognizer_runner_returns_what_the_analyzer_engine_returns(
    redactor_factory: Callable[..., Redactor], ner: bool
) -> None:
    analyzer = redactor_factory(ner=ner, hash_key="test-hash-key").analyzer
    engine = analyzer.engines.analyzer
    runner = analyzer._runners["en"]
    contexts = [None, ["cellphone_no"], ["customer_name"], ["aws_secret_access_key"], ["ssn"], ["card"]]
    compared = 0
    for i, text in enumerate(corpus()[::6]):
        context = contexts[i % len(contexts)]
        entities: list[str] = []
        for r in runner.recognizers:
            if isinstance(r, Prefiltered) and not r.may_match(text, context):
                continue
            entities.extend(e for e in r.supported_entities if e not in entities)
        if not entities:
            continue
        want = engine.analyze(text, language="en", entities=entities, context=context,
                              score_threshold=analyzer.floor, nlp_artifacts=analyzer.engines.empty_artifacts["en"])  # fmt: skip
        got = runner.run(text, entities, context, analyzer.floor)
        assert [(r.entity_type, r.start, r.end, r.score) for r in got] == [
            (r.entity_type, r.start, r.end, r.score) for r in want
        ], (text[:200], context)
        compared += 1
    assert compared > 300


CREDENTIAL_EDGE_TEXTS = [
    "PASSWORD: Hunter2!x and Api_Key=Zx9Qw8Er7Ty6",
    "the password for sudo is S3cret!pass",
    "Kennwort für das Portal: Fr8hling!2024 ; mot  de passe est M0t!dep4sse",
    "Cookie: sid=0123456789abcdefABCDEF; theme=dark; csrftoken=abcdef0123456789abcdef",
    "contraseña: Cl4ve!segura and şifre: G1zli!anahtar",  # not ASCII: scanned whole
    "passwordpassword=abc123!x;;;password = 'q1w2e3r4!'",
]


def test_credential_patterns_find_what_the_whole_text_scan_finds() -> None:
    """``Anchored`` (tried only where a pattern's first word occurs) finds the matches of ``finditer``."""
    rec = CredentialRecognizer()
    texts = (*corpus(), *CREDENTIAL_EDGE_TEXTS)
    differ = [
        (p.name, t)
        for p, anchored in rec._compiled
        for t in texts
        if [m.span() for m in anchored.finditer(t)] != [m.span() for m in anchored.rx.finditer(t)]
    ]
    assert differ == []
    found = sum(1 for _, a in rec._compiled for t in CREDENTIAL_EDGE_TEXTS for _ in a.finditer(t))
    assert found >= 8
