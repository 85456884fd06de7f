"""National identity and tax numbers of other countries: each format's shape, then its check digits.

A number is taken for an identity number in one of three ways:

- by its shape alone, for formats no other number shares once the check digits hold: a dotted Brazilian
  CPF (``123.456.789-09``), a Spanish DNI or NIE with its control letter, an Italian codice fiscale, a
  spaced French NIR, a Chinese resident identity number, a Korean resident registration number with its
  hyphen, a UK National Insurance number, an Indian PAN of a person (fourth letter ``P``);
- after its name, in the language it is written in (``CPF:``, ``Aadhaar no.``, ``Steuer-ID``, ``BSN``,
  ``PESEL``, ``personnummer``, ``NHS number``, ``SIN``, ``マイナンバー``, ``national ID``, ``tax id`` …, up
  to 48 characters before it), for the formats that look like other numbers (eleven digits are also a
  phone number): the check digits must still hold;
- under a key that names one (``{"cpf": …}``, ``{"steuer_id": …}``, a CSV column): the value is the number
  the writer said it is, check digits or not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar, NamedTuple

from presidio_analyzer import RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts

from governance.redaction.key_context import KIND_WORDS, normal_key
from governance.redaction.recognizers import national_id_checks as check
from governance.redaction.recognizers.base import (
    NUMBER_RUN,
    SluiceLocalRecognizer,
    any_of,
    context_words,
    has_number_run,
    lowered,
)


class IdFormat(NamedTuple):
    name: str
    shape: re.Pattern[str]
    valid: Callable[[str], bool]
    by_shape: bool  # the shape and check digits suffice, no name needed
    named: re.Pattern[str] | None  # the words that name this format


# Names that fit any format: "national ID", "ID number", "identity number", "tax ID", "documento" ...
_GENERIC = (
    r"national[ _\-]?id|id(?:entity|entification)?[ _\-]?(?:number|no|nr|#)|tax[ _\-]?id|identity card"
    r"|personal[ _\-]?(?:id|number)|documento|n[úu]mero de identificaci[óo]n|numéro d'identification|ausweis"
    r"|身份证|주민등록번호|citizen[ _\-]?id"
)


def _words(alternatives: str) -> re.Pattern[str]:
    return re.compile(r"(?i)(?<![a-z0-9_])(?:" + alternatives + r")(?![a-z])")  # CJK words touch


def _fmt(name: str, shape: str, valid: Callable[[str], bool], by_shape: bool, names: str = "") -> IdFormat:
    return IdFormat(name, re.compile(shape), valid, by_shape, _words(names) if names else None)


GENERIC_NAMES = _words(_GENERIC)


# not glued to a longer Latin token on either side (a sentence's full stop is fine; in Chinese, Japanese or
# Korean text the words around a number touch it)
_D = r"(?<![A-Za-z0-9_.\-/])"
_E = r"(?![A-Za-z0-9_\-/]|\.\d)"
# a codice fiscale written in lower case counts only after its name
_LOWER_CASE_CF = _fmt(
    "IT_CODICE_FISCALE",
    _D + r"(?i:[a-z]{6}\d{2}[a-ehlmpr-t]\d{2}[a-z]\d{3}[a-z])" + _E,
    check.it_codice_fiscale,
    False,
    r"c\.? ?f\.?|codice fiscale|tax ?code",
)
FORMATS: tuple[IdFormat, ...] = (
    _fmt("BR_CPF", _D + r"\d{3}\.\d{3}\.\d{3}-\d{2}" + _E, check.br_cpf, True),
    _fmt("BR_CPF", _D + r"\d{11}" + _E, check.br_cpf, False, r"cpf"),
    _fmt("ES_DNI", _D + r"\d{8}[ \-]?[A-Z]" + _E, check.es_dni, True),
    _fmt("ES_NIE", _D + r"[XYZ][ \-]?\d{7}[ \-]?[A-Z]" + _E, check.es_nie, True),
    _fmt("IT_CODICE_FISCALE", _D + r"[A-Z]{6}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z]" + _E, check.it_codice_fiscale, True),
    _LOWER_CASE_CF,
    _fmt("FR_NIR", _D + r"[12] \d{2} \d{2} (?:\d{2}|2A|2B) \d{3} \d{3} \d{2}" + _E, check.fr_nir, True),
    _fmt("FR_NIR", _D + r"[12]\d{4}(?:\d{2}|2A|2B)\d{8}" + _E, check.fr_nir, False,
         r"nir|insee|s[ée]curit[ée] sociale|social security|n° ?ss|num[ée]ro ss|s[ée]cu"),
    _fmt("CN_RESIDENT_ID", _D + r"[1-9]\d{16}[\dXx]" + _E, check.cn_resident_id, True),
    _fmt("KR_RRN", _D + r"\d{6}-[1-4]\d{6}" + _E, check.kr_rrn, True),
    _fmt("KR_RRN", _D + r"\d{6}[1-4]\d{6}" + _E, check.kr_rrn, False, r"주민(?:등록)?번호|rrn|resident registration"),
    _fmt("UK_NINO", _D + r"[A-Z]{2} ?\d{2} ?\d{2} ?\d{2} ?[A-D]" + _E, check.uk_nino, True),
    _fmt("IN_PAN", _D + r"[A-Z]{3}P[A-Z]\d{4}[A-Z]" + _E, check.in_pan, True),
    _fmt("IN_PAN", _D + r"[A-Z]{5}\d{4}[A-Z]" + _E, check.in_pan, False, r"pan"),
    _fmt("IN_AADHAAR", _D + r"[2-9]\d{3}[ \-]?\d{4}[ \-]?\d{4}" + _E, check.in_aadhaar, False, r"aadh?aar|uidai|आधार"),
    _fmt("UK_NHS", _D + r"\d{3}[ \-]?\d{3}[ \-]?\d{4}" + _E, check.uk_nhs, False, r"nhs"),
    _fmt("CA_SIN", _D + r"\d{3}[ \-]?\d{3}[ \-]?\d{3}" + _E, check.ca_sin, False,
         r"sin|social insurance|nas|assurance sociale"),
    _fmt("DE_STEUER_ID", _D + r"[1-9]\d(?: ?\d{3}){3}" + _E, check.de_steuer_id, False,
         r"steuer[\- ]?id|steuer-?identifikationsnummer|steuerliche identifikationsnummer|idnr|tin"),
    _fmt("NL_BSN", _D + r"\d{4}\.?\d{2}\.?\d{3}" + _E, check.nl_bsn, False,
         r"bsn|burgerservicenummer|sofinummer|citizen service number"),
    _fmt("PL_PESEL", _D + r"\d{11}" + _E, check.pl_pesel, False, r"pesel"),
    _fmt("SE_PERSONNUMMER", _D + r"(?:\d{2})?\d{6}[\-+]?\d{4}" + _E, check.se_personnummer, False,
         r"personnummer|personnr|pnr|samordningsnummer"),
    _fmt("JP_MY_NUMBER", _D + r"\d{4}[ \-]?\d{4}[ \-]?\d{4}" + _E, check.jp_my_number, False,
         r"マイナンバー|個人番号|my number"),
)  # fmt: skip
_WINDOW = 48
# Where each letter format's first two digits follow a capital letter, and how many letters before that
# capital the format starts: an NIE's X/Y/Z is that capital, a NINO's second letter, a PAN's fifth, a
# codice fiscale's sixth. One scan finds the capitals; each format is tried once at its own offset.
_LETTER_OFFSETS = {"ES_NIE": 0, "UK_NINO": 1, "IN_PAN": 4, "IT_CODICE_FISCALE": 5}
NUMBER_FORMATS = tuple(f for f in FORMATS if f.name not in _LETTER_OFFSETS)
LETTER_FORMATS = tuple(
    (f, _LETTER_OFFSETS[f.name]) for f in FORMATS if f.name in _LETTER_OFFSETS and f is not _LOWER_CASE_CF
)
LOWER_CASE_FORMATS = (_LOWER_CASE_CF,)  # looked for only where one of its names can be
_LETTER_ANCHOR = re.compile(r"[A-Z][ \-]?\d\d")
# Where a number format can start: a digit that begins a run of 8+ digits and separators (one pass; each
# format is then tried at these places only).
_NUMBER_START = re.compile(r"(?<![A-Za-z0-9_.\-/])\d(?=[\d .\-+]{7})")
# Keys that name some identity number ("id_number" is not "id"; an "ssn" may hold another country's):
# the value must have its check digits right, and scores below a recognizer of the specific kind
GENERIC_KEYS = frozenset({"id_number", "id_no", "idno", "national_id", "personal_id", "identity_number",
                          "document_number", "tax_id", "citizen_id", "nationalid", "idnumber", "ssn",
                          "tax_identification_number", "identification_number", "social_security_number",
                          "tin", "taxid"})  # fmt: skip
KEY_WORDS = KIND_WORDS["NATIONAL_ID"]


def _lower_case_named(low: str) -> bool:
    return "fisc" in low or "c.f" in low or "cf" in low or "tax" in low


def _keyed(context: list[str] | None) -> bool:
    """Whether a key of ``context`` names an identity number (its country's, or a generic one)."""
    return bool(context) and (
        not context_words(context).isdisjoint(KEY_WORDS)
        or any(normal_key(c) in GENERIC_KEYS for c in context or ())
    )


class NationalIdRecognizer(SluiceLocalRecognizer):
    ENTITY: ClassVar[str] = "NATIONAL_ID"
    SCORE: ClassVar[float] = 0.85
    GENERIC_SCORE: ClassVar[float] = 0.8
    TRIGGER_PATTERNS = (
        NUMBER_RUN,
        _LETTER_ANCHOR.pattern,
        any_of(("fisc", "c.f", "cf", "tax"), caseless=True),
    )

    VERSION: ClassVar[str] = "1"

    def __init__(self, supported_language: str = "en") -> None:
        super().__init__(supported_language, version=self.VERSION)

    def keyed(self, context: list[str]) -> bool:
        return _keyed(context)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        return (
            has_number_run(text)
            or _LETTER_ANCHOR.search(text) is not None
            or _keyed(context)
            or _lower_case_named(lowered(text))
        )

    def analyze(
        self, text: str, entities: list[str] | None = None, nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        found: dict[tuple[int, int], float] = {}
        names: dict[tuple[int, int], str] = {}

        def take(fmt: IdFormat, m: re.Match[str] | None) -> bool:
            score = self._accept(text, fmt, m.group(), m.start(), found) if m is not None else 0.0
            if m is not None and score:
                found[m.span()], names[m.span()] = score, fmt.name
            return bool(score)

        if has_number_run(text):
            for start in _NUMBER_START.finditer(text):
                for fmt in NUMBER_FORMATS:
                    if take(fmt, fmt.shape.match(text, start.start())):
                        break
        for anchor in _LETTER_ANCHOR.finditer(text):
            for fmt, back in LETTER_FORMATS:
                if anchor.start() >= back and take(fmt, fmt.shape.match(text, anchor.start() - back)):
                    break
        if _lower_case_named(lowered(text)):
            for fmt in LOWER_CASE_FORMATS:
                for m in fmt.shape.finditer(text):
                    take(fmt, m)
        return [self.result(s, e, score, names[(s, e)]) for (s, e), score in found.items()]

    def _accept(
        self, text: str, fmt: IdFormat, value: str, start: int, found: dict[tuple[int, int], float]
    ) -> float:
        """The score of ``value`` as ``fmt`` (0: not one): check digits right, and unambiguous by shape or
        named just before by its own name; named by a generic one (``ID number``, ``tax ID``) it scores
        lower, so that a recognizer of a more specific kind (a US SSN) wins the same span."""
        end = start + len(value)
        if any(s < end and start < e for s, e in found) or not fmt.valid(value):
            return 0.0
        if fmt.by_shape:
            return self.SCORE
        lo = max(0, start - _WINDOW)
        if fmt.named is not None and fmt.named.search(text, lo, start) is not None:
            return self.SCORE
        return self.GENERIC_SCORE if GENERIC_NAMES.search(text, lo, start) is not None else 0.0

    def from_key(self, text: str, context: list[str] | None) -> RecognizerResult | None:
        """A whole value shaped like one of the formats, under a key that names an identity number."""
        if not _keyed(context):
            return None
        stripped = text.strip()
        for fmt in FORMATS:
            if fmt.shape.fullmatch(stripped):
                start = len(text) - len(text.lstrip())
                return self.result(start, start + len(stripped), self.SCORE, fmt.name, by_key=True)
        return None
