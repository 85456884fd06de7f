"""The one multi-pattern scan per text never hides a recognizer that would have matched.

Every recognizer whose ``may_match`` accepts a text must be among the scan's candidates for it, on every
text of the evaluation sets (the speed-gate corpus: both draws of the independent set, the tuning set, the
benchmark's trajectories, with JSON leaves), the held-out PII corpus, and the same texts upper-cased and
title-cased (the triggers' case folding), with and without a JSON key.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from functools import cache

import pytest

from bench.redaction_corpus import load_corpus
from governance.redaction import Redactor
from governance.redaction.recognizers.base import Prefiltered
from governance.redaction.trigger_scan import TriggerScan
from tests.governance.redaction.test_speed_gates import EDGE_TEXTS, corpus

CONTEXTS = [None, ["shipping_address"], ["dob"], ["passport_no"], ["customer_name"], ["aws_secret_access_key"],
            ["iban"], ["national_id"], ["password"], ["note"]]  # fmt: skip
EXTRA = [
    "Geboren am 03.04.1961 in Köln",
    "GEBOREN: 03.04.1961",
    "Wohnhaft in der Lindenstraße 12, 10115 Berlin",
    "Adresse: Storgatan 5, 114 51 Stockholm",
    "東京都新宿区西新宿2-8-1",
    "Dear MR. Okonkwo, thanks",
    "Contact: Ana Souza <ana@example.com>",
    "ПАРОЛЬ: hunter2hunter2",
    "NÉ LE 12/03/1975",
    "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<",
    "\ud800 lone surrogate 4111 1111 1111 1111",
]


def _strings(obj: object) -> Iterator[str]:
    """Every string of a corpus record, and of the JSON text in it (tool arguments and results)."""
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)
    elif isinstance(obj, str):
        yield obj
        if obj.lstrip()[:1] in "{[":
            with contextlib.suppress(ValueError):
                yield from _strings(json.loads(obj))


@cache
def texts() -> tuple[str, ...]:
    base = [*corpus(), *EDGE_TEXTS, *EXTRA]
    for record in load_corpus():
        base += list(_strings(record))
    out = dict.fromkeys(base)
    for t in base[::3]:
        out.update(dict.fromkeys((t.upper(), t.title())))
    return tuple(out)


@pytest.mark.parametrize("ner", [False, True])
def test_every_recognizer_that_may_match_is_a_candidate(
    redactor_factory: Callable[..., Redactor], ner: bool
) -> None:
    analyzer = redactor_factory(ner=ner, hash_key="test-hash-key").analyzer
    recognizers = analyzer._by_language["en"]
    scan = analyzer._scans["en"]
    assert scan.patterns > 20 and not scan.always - {
        i for i, r in enumerate(recognizers) if not isinstance(r, Prefiltered)
    }  # every Sluice recognizer has a trigger
    hidden: list[tuple[str, str, list[str] | None]] = []
    asked = 0
    for n, text in enumerate(texts()):
        context = CONTEXTS[n % len(CONTEXTS)]
        for ctx in (None, context) if context else (None,):
            picked = set(scan.candidates(text, ctx))
            asked += len(picked)
            for i, r in enumerate(recognizers):
                if i not in picked and isinstance(r, Prefiltered) and r.may_match(text, ctx):
                    hidden.append((r.name, text[:120], ctx))
    assert hidden == []
    assert asked < 0.5 * len(recognizers) * len(texts())  # the scan does leave most recognizers out


def test_a_text_the_scan_cannot_read_asks_every_recognizer(redactor_factory: Callable[..., Redactor]) -> None:
    analyzer = redactor_factory(ner=True, hash_key="test-hash-key").analyzer
    scan: TriggerScan = analyzer._scans["en"]
    assert scan.candidates("\udc80 4111 1111 1111 1111", None) == list(scan.everyone)
    assert scan.candidates("plain words here", None) == sorted(scan.always)
    found, _ = analyzer.analyze("card \udc80 4111 1111 1111 1111")
    assert [f.entity_type for f in found] == ["CREDIT_CARD"]
    names = {analyzer._by_language["en"][i].name for i in scan.candidates("n/a", ["customer_name"])}
    assert "PersonKeyRecognizer" in names and "StreetAddressRecognizer" not in names  # the key decides
    names = {analyzer._by_language["en"][i].name for i in scan.candidates("n/a", ["shipping_address"])}
    assert "StreetAddressRecognizer" in names and "PersonKeyRecognizer" not in names
