"""PERSON by shape: a run of capitalised words that a lexicon says is a name, where no model or cue says so.

Rules that hold for a class of names, not for one name (``name_lexicon``):

- a frequent given name of one of the covered cultures followed by one to three capitalised words
  (``Chukwuemeka Okafor``, ``Ana Beatriz Nascimento Araújo``, ``Kenji Hayashi``), in capitals too
  (``KENJI HAYASHI``);
- a family name written first (Vietnamese, Chinese, Korean) followed by a Vietnamese middle name or a given
  name (``Nguyễn Văn An``, ``Zhang Wei``, ``Park Ji-hoon``);
- two or three capitalised words whose last is shaped only like a family name (``Ngozi Okonkwo``,
  ``Dragana Kovačević``, ``Aiko Fujisawa``).

A word glued by a hyphen is one word (``Karl-Heinz Schmidt-Bauer``). The run must not read as a product
(``name_shape.product_like``, on the title-cased words when written in capitals) nor follow a software
verb. Texts whose words hold no given name, no family-first name and no capitalised pair are skipped
after one set test on the words the other recognizers share.
"""

from __future__ import annotations

import re

from presidio_analyzer import RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts

from governance.redaction.recognizers.base import SluiceLocalRecognizer, letter_words, whole_words
from governance.redaction.recognizers.name_lexicon import (
    FAMILY_FIRST,
    FAMILY_SHAPE_TRIGGERS,
    GIVEN_NAMES,
    VIETNAMESE_MIDDLE,
    family_shaped,
    pinyin,
)
from governance.redaction.recognizers.name_shape import PARTICLES, product_like

SCORE = 0.85
_UPPER = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĖĘĚĞĠĢĪĮİĶĹĻĽŁŃŅŇŌŐŒŔŖŘŚŜŞŠŢŤŪŬŮŰŲŸŹŻŽƠƯẠ-Ỹ"
_WORD = r"[" + _UPPER + r"][^\W\d_]*(?:[-'’][^\W\d_]+)*"
_RUN = re.compile(
    r"(?<![\w'’\-])"
    + _WORD
    + r"(?:[ \t]+(?:(?:"
    + "|".join(sorted(PARTICLES))
    + r")[ \t]+)?"
    + _WORD
    + r"){1,4}"
)
_HEADS = GIVEN_NAMES | FAMILY_FIRST
_SPLIT = re.compile(r"[ \t]+")
_THING_BEFORE = re.compile(
    r"(?i)\b(?:upgrad\w*|install\w*|deploy\w*|updat\w*|migrat\w*|configur\w*|using|run|running|launch\w*|"
    r"bought|ordered)\s+(?:the\s+|a\s+)?$"
)


def _low(word: str) -> str:
    return word.lower()


def _name_at(words: list[str]) -> tuple[int, int] | None:
    """(first, last+1) word indexes of the name in a capitalised run, or None."""
    for i, w in enumerate(words[:-1]):
        low = _low(w)
        first = low.split("-")[0]
        nxt = _low(words[i + 1])
        if low in FAMILY_FIRST and (
            nxt in VIETNAMESE_MIDDLE or nxt in GIVEN_NAMES or "-" in nxt or (len(nxt) > 3 and pinyin(nxt))
        ):
            return i, len(words)
        if low in GIVEN_NAMES or first in GIVEN_NAMES:
            return i, len(words)
    if 2 <= len(words) <= 3 and family_shaped(words[-1]):
        return 0, len(words)
    return None


class PersonShapeRecognizer(SluiceLocalRecognizer):
    ENTITY = "PERSON"
    TRIGGER_PATTERNS = (whole_words(_HEADS), *FAMILY_SHAPE_TRIGGERS)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        words = letter_words(text)
        return not words.isdisjoint(_HEADS) or any(len(w) >= 5 and family_shaped(w) for w in words)

    def analyze(
        self, text: str, entities: list[str] | None = None, nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        results: list[RecognizerResult] = []
        for m in _RUN.finditer(text):
            spans = [(w.start() + m.start(), w.end() + m.start()) for w in re.finditer(r"\S+", m.group())]
            words = [text[s:e] for s, e in spans]
            caps = [w for w in words if w.lower() not in PARTICLES]
            upper = all(w.isupper() for w in caps)
            if not upper and any(len(w) > 1 and w.isupper() for w in caps):
                continue  # an acronym among capitalised words: a product or an organisation
            found = _name_at(words)
            if found is None:
                continue
            i, j = found
            while j > i + 1 and words[j - 1].lower() in PARTICLES:
                j -= 1
            if j - i < 2:
                continue
            start, end = spans[i][0], spans[j - 1][1]
            span = text[start:end]
            shown = span.title() if upper else span
            if product_like(shown, text, end) or _THING_BEFORE.search(text, max(0, start - 30), start):
                continue
            results.append(self.result(start, end, SCORE, "name by shape"))
        return results
