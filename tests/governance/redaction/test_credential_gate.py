"""The credential recognizer's gate asks it only where it can find something, and never hides a finding.

On ASCII text the English pattern runs only where one of its first words occurs (``Anchored``), so a text
holding "pass" or "secret" in other words ("122 passed", "secret santa") is not asked; on any other text
the shorter stems still decide. Checked on every text of the evaluation sets (``corpus``) and on edge
cases written here: wherever the recognizer finds something, ``may_match`` accepts the text; the
quoted-pair shortcut answers as a lower-case test per quoted name does; the words of the three text
patterns, found in one RE2 pass on ASCII text, are those a substring test per word finds; the trigger scan
remembers its answer per set of fired patterns without changing it.
"""

from __future__ import annotations

from collections.abc import Callable

from governance.redaction import Redactor
from governance.redaction.recognizers.credential_recognizer import (
    _ASCII_TRIGGER_WORDS,
    _NAME_PARTS,
    CredentialRecognizer,
    _may_pair,
    _triggers,
)
from tests.governance.redaction.test_speed_gates import corpus

EDGE_TEXTS = [
    "122 passed, 0 failed in 3.24s",
    "the secret santa list is ready",
    "PASSWORD: Hunter2!x and Api_Key=Zx9Qw8Er7Ty6",
    "the password for sudo is S3cret!pass",
    "export AUTH_TOKEN=ghx_8f7a6b5c4d3e2f1a0b9c",
    "Cookie: sid=0123456789abcdefABCDEF; theme=dark",
    "contraseña: Cl4ve!segura",
    "naïve pass: Fr8hling!2024x",  # not ASCII: the stem "pass" asks the recognizer
    "Pass: Fr8hling!2024x",
    'os.getenv("DB_PASS", "Fallb4ck!value")',
    "process.env.API_SECRET || 'Zx9Qw8Er7Ty6'",
    "Ünïcode 'Api_Token', 'Zx9Qw8Er7Ty6Ui5'",
]


def _may_pair_per_name(text: str) -> bool:
    """``_may_pair`` lower-casing each quoted name and looking for each word in it."""
    for q in ("'", '"'):
        end = text.find(q + ",")
        while end != -1:
            start = text.rfind(q, max(0, end - 65), end)
            if start != -1 and any(p in text[start + 1 : end].lower() for p in _NAME_PARTS):
                return True
            end = text.find(q + ",", end + 2)
    at = text.find("env.")
    while at != -1:
        if any(p in text[at + 4 : at + 68].lower() for p in _NAME_PARTS):
            return True
        at = text.find("env.", at + 4)
    return False


def test_credential_gate_accepts_every_text_the_recognizer_finds_something_in() -> None:
    rec = CredentialRecognizer()
    texts = (*corpus(), *EDGE_TEXTS)
    hidden = [t[:120] for t in texts if rec.analyze(t) and not rec.may_match(t)]
    assert hidden == []
    assert not rec.may_match("122 passed, 0 failed in 3.24s")
    assert not rec.may_match("the secret santa list is ready")
    assert rec.may_match("naïve pass: Fr8hling!2024x")  # not ASCII: the stem decides
    assert not rec.may_match("Pass: Fr8hling!2024x") and rec.analyze("Pass: Fr8hling!2024x") == []
    assert len(rec.analyze("the password for sudo is S3cret!pass")) == 1


def test_quoted_pair_shortcut_answers_as_the_per_name_test() -> None:
    texts = (*corpus(), *EDGE_TEXTS)
    assert [t[:80] for t in texts if _may_pair(t) != _may_pair_per_name(t)] == []
    assert _may_pair('os.getenv("DB_PASS", "Fallb4ck!value")')
    assert _may_pair("Ünïcode 'Api_Token', 'Zx9Qw8Er7Ty6Ui5'")
    assert not _may_pair("f('index', 278)")


def _triggers_word_by_word(low: str) -> tuple[bool, bool, bool]:
    """What ``_triggers`` answers on ASCII text, one substring test per word."""
    english, other, cookie = (any(w in low for w in words) for words in _ASCII_TRIGGER_WORDS)
    return english, other, cookie


def test_trigger_words_found_in_one_pass_are_those_of_a_test_per_word() -> None:
    texts = [t.lower() for t in (*corpus(), *EDGE_TEXTS)]
    ascii_texts = [t for t in texts if t.isascii()]
    assert [t[:80] for t in ascii_texts if _triggers(t) != _triggers_word_by_word(t)] == []
    assert _triggers("db_password=x; cookie: a") == (True, False, True)
    assert _triggers("mot de passe: x") == (False, True, False)
    assert _triggers("passed; passes; pass") == (False, False, False)
    # every word, at the start, the middle and the end of a text
    for words in _ASCII_TRIGGER_WORDS:
        for w in words:
            for t in (w, f"x {w} y", f"ab{w}", f"{w}\n"):
                assert _triggers(t) == _triggers_word_by_word(t), t
    # other text keeps its substring tests (the stems, and the other languages' own words)
    assert _triggers("naïve pass") == (True, False, False)
    assert _triggers("hasło: x") == (False, True, False)


def test_trigger_scan_remembers_its_answer_without_changing_it(
    redactor_factory: Callable[..., Redactor],
) -> None:
    analyzer = redactor_factory(hash_key="test-hash-key").analyzer
    scan = analyzer._scans["en"]
    texts = corpus()[:400]
    first = [scan.candidates(t, ctx) for t in texts for ctx in (None, ["password"])]
    first[0].append(-1)  # a caller's list is its own
    scan._by_hits.clear()
    fresh = [scan.candidates(t, ctx) for t in texts for ctx in (None, ["password"])]
    first[0].pop()
    assert first == fresh
    assert len(scan._by_hits) < len(fresh) / 2  # texts share the sets of patterns they fire
