"""The benchmark's labelled eval set: deterministic, valid identifiers, and redacted without leaks."""

from __future__ import annotations

import json
import random

import phonenumbers

from bench.data import identifiers as ids
from bench.data.redaction_eval_set import build_eval_set
from bench.redaction import iter_leaves, leak_check, score
from governance.redaction import Redactor
from governance.redaction.recognizers import DEFAULT_ENTITIES
from governance.redaction.recognizers.base import luhn_valid
from governance.redaction.recognizers.payment_card_recognizer import issuer_valid


def test_eval_set_is_deterministic() -> None:
    a = build_eval_set(7, 3, 2, 10)
    b = build_eval_set(7, 3, 2, 10)
    assert [c.model_dump() for c in a] == [c.model_dump() for c in b]
    assert build_eval_set(8, 3, 2, 10)[0].text != a[0].text


def test_generated_identifiers_are_valid() -> None:
    rng = random.Random(3)
    for _ in range(200):
        card, _ = ids.card(rng)
        digits = card.replace(" ", "").replace("-", "")
        assert luhn_valid(digits) and issuer_valid(digits)
        iban, _ = ids.iban(rng)
        compact = iban.replace(" ", "")
        assert int("".join(str(int(c, 36)) for c in compact[4:] + compact[:4])) % 97 == 1
        for gen in (ids.phone_us, ids.phone_intl):
            phone, variant = gen(rng)
            region = "GB" if variant == "phone_gb_national" else "US"
            assert phonenumbers.is_valid_number(phonenumbers.parse(phone, region))
        ssn, _ = ids.ssn(rng)
        area = int(ssn[:3])
        assert 0 < area < 900 and area != 666 and ssn[4:6] != "00" and ssn[-4:] != "0000"


def test_small_eval_set_full_recall_no_false_positives(plain: Redactor) -> None:
    cases = build_eval_set(11, 6, 3, 60)

    def analyze(text: str, ctx: list[str] | None) -> list[tuple[str, int, int]]:
        found, _ = plain.analyzer.analyze(text, ctx)
        return [(f.entity_type, f.start, f.end) for f in found if f.score >= plain.config.score_threshold]

    result = score(cases, analyze, walk_json=True, entities=DEFAULT_ENTITIES)
    assert result["clean_false_positives"] == 0
    assert all(m["recall"] == 1.0 and m["precision"] == 1.0 for m in result["per_entity"].values()), result
    assert leak_check(cases, plain) == 0
    json_case = next(c for c in cases if c.kind == "json" and not c.clean)
    assert any(p == json_case.spans[0].path for p, _, _ in iter_leaves(json.loads(json_case.text)))
