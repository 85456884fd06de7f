"""Dates of birth: a date written right after a birth cue, or any date under a birth key.

A date alone is not personal data (a deploy date, an invoice date stays); a date the text says someone
was born on is. The cue comes shortly before the date, in the languages the other recognizers cover:
``born``, ``DOB``, ``date of birth``, ``birthday``, ``né le`` / ``née le``, ``date de naissance``,
``geboren am``, ``geb.``, ``Geburtsdatum``, ``data de nascimento``, ``nascido em``, ``fecha de
nacimiento``, ``nacido el``, ``nato il``, ``data di nascita``, ``geboortedatum``, ``data urodzenia``,
``生年月日``, ``出生日期``, ``생년월일``. Under a key that names a birth date (``dob``, ``date_of_birth``,
``birthDate``, ``Geburtsdatum``) the whole value is one when it holds a digit.

Dates are read by these patterns: ISO (``1958-10-04``), numeric day/month/year with ``/ . -``
(``04.10.1958``, ``10/04/58``), day and month name (``4 October 1958``, ``4th of Oct. 1958``,
``4 de outubro de 1958``, ``12. März 1961``), month name first (``October 4, 1958``), and CJK
(``1958年10月4日``). ``dateparser`` and ``datefinder`` (on PyPI) parse far more forms, but only after a
date has been found, and ``datefinder`` on its own reads a date into most numbers (~5,000 short texts/s,
0.2 ms a text, before any cue test); a cue must be found first anyway, and after one these patterns are
enough.
"""

from __future__ import annotations

import re
from typing import ClassVar

from presidio_analyzer import RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts

from governance.redaction.key_context import KIND_WORDS, key_words
from governance.redaction.recognizers.base import (
    SluiceLocalRecognizer,
    any_of,
    letter_words,
    vocabulary,
    whole_words,
)

SCORE = 0.85


_MONTHS = vocabulary(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "janvier février fevrier mars avril mai juin juillet août aout septembre octobre novembre décembre decembre "
    "januar februar märz maerz juni juli oktober dezember "
    "enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre noviembre diciembre "
    "janeiro fevereiro março marco maio junho julho setembro outubro novembro dezembro "
    "gennaio febbraio aprile maggio giugno luglio settembre ottobre dicembre "
    "januari februari maart mei augustus "
    "stycznia lutego marca kwietnia maja czerwca lipca sierpnia września wrzesnia października pazdziernika "
    "listopada grudnia"
)
_MONTH = r"(?i:" + "|".join(sorted(set(_MONTHS), key=len, reverse=True)) + r")\.?"
_DAY = r"(?:0?[1-9]|[12]\d|3[01])"
_YEAR = r"(?:1[89]\d\d|20\d\d)"
DATE = (
    r"(?:" + _YEAR + r"-(?:0?[1-9]|1[0-2])-" + _DAY  # ISO
    + r"|" + _DAY + r"[./\-](?:0?[1-9]|1[0-2])[./\-](?:" + _YEAR + r"|\d\d)"  # day first
    + r"|(?:0?[1-9]|1[0-2])/" + _DAY + r"/(?:" + _YEAR + r"|\d\d)"  # US month first
    + r"|" + _DAY + r"(?:st|nd|rd|th|er|º)?\.?[ \t]+(?:of[ \t]+|de[ \t]+)?" + _MONTH + r",?[ \t]+(?:de[ \t]+)?" + _YEAR
    + r"|" + _MONTH + r"[ \t]+" + _DAY + r"(?:st|nd|rd|th)?,?[ \t]+" + _YEAR
    + r"|" + _YEAR + r"[ \t]*年[ \t]*\d{1,2}[ \t]*月[ \t]*\d{1,2}[ \t]*日"
    + r"|" + _YEAR + r"[./]" + r"(?:0?[1-9]|1[0-2])[./]" + _DAY
    + r"|" + _DAY + r"[ \t]+" + _MONTH + r"[ \t]+" + _YEAR
    + r")"
)  # fmt: skip
_CUE = (
    r"(?i:\bborn\b(?:[ \t]+(?:on|in))?|\bd\.?o\.?b\b\.?|date[ \t]+of[ \t]+birth|birth[ \t_\-]?date|\bbirthday|"
    r"\bb\.[ \t]|\bnée?\b(?:[ \t]+le)?|date[ \t]+de[ \t]+naissance|\bgeboren(?:[ \t]+am)?|\bgeb\.|geburtsdatum|"
    r"geburtstag|data[ \t]+de[ \t]+nascimento|nascid[oa]s?[ \t]+(?:em|a|no|na)|fecha[ \t]+de[ \t]+nacimiento|"
    r"nasceu(?:[ \t]+em)?|naci[óo](?:[ \t]+el)?|nacid[oa][ \t]+el|nat[oa][ \t]+il|data[ \t]+di[ \t]+nascita|geboortedatum|geboren[ \t]+op|"
    r"data[ \t]+urodzenia|urodzon[ya]|生年月日|出生日期|생년월일)"
)
# the date after the cue on its line, or on the next (a passport page prints the label above the value)
_AFTER_CUE = re.compile(
    _CUE + r"(?:[^\n\d]{0,40}?|[^\n\d,;|\t]{0,40}?\r?\n[ \t]*)(?P<v>" + DATE + r")(?![\d])"
)
_DATE_IN = re.compile(r"(?<![\d])(?P<v>" + DATE + r")(?![\d])")
_WHOLE_DATE = re.compile(r"\s*(?P<v>" + DATE + r")\s*")
CUE_WORDS = frozenset(
    {"born", "dob", "birth", "birthdate", "birthday", "né", "née", "naissance", "geboren",
     "geb", "geburtsdatum", "geburtstag", "nascimento", "nascido", "nascida", "nasceu", "nació", "nacio", "nacimiento", "nacido", "nacida",
     "nato", "nata", "nascita", "geboortedatum", "urodzenia", "urodzony", "urodzona"}
)  # fmt: skip
# substrings of the cues (any case they are written in): texts holding none skip the word scan
_HINTS = ("orn", "ORN", "ob", "OB", "o.b", "O.B", "irth", "IRTH", "né", "NÉ", "eb", "EB", "asc", "ASC", "aci",
          "ACI", "ato", "ATO", "ata", "ATA", "aissance", "urodz", "Urodz", "URODZ", "生年月日", "出生日期", "생년월일")  # fmt: skip
_CJK_CUES = ("生年月日", "出生日期", "생년월일")
BIRTH_KEY_WORDS = KIND_WORDS["DATE_OF_BIRTH"] | {"urodzenia", "出生日期", "생년월일"}


def names_birth(context: list[str] | None) -> bool:
    """A key that names a date of birth (``dob``, ``date_of_birth``, ``birthDate``)."""
    return any(not BIRTH_KEY_WORDS.isdisjoint(key_words(c)) for c in context or ())


class DateOfBirthRecognizer(SluiceLocalRecognizer):
    ENTITY: ClassVar[str] = "DATE_OF_BIRTH"
    TRIGGER_PATTERNS = (any_of((*_CJK_CUES, "D.O.B", "d.o.b")), whole_words(CUE_WORDS))

    VERSION: ClassVar[str] = "1"

    def __init__(self, supported_language: str = "en") -> None:
        super().__init__(supported_language, version=self.VERSION)

    def keyed(self, context: list[str]) -> bool:
        return names_birth(context)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        if names_birth(context):
            return True
        if not any(h in text for h in _HINTS):
            return False
        return (
            any(c in text for c in _CJK_CUES)
            or "D.O.B" in text
            or "d.o.b" in text
            or not CUE_WORDS.isdisjoint(letter_words(text))
        )

    def analyze(
        self, text: str, entities: list[str] | None = None, nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        return [self.result(*m.span("v"), SCORE, "date after a birth cue") for m in _AFTER_CUE.finditer(text)]

    def from_key(self, text: str, context: list[str] | None) -> RecognizerResult | None:
        """The value under a birth key: the date in it, or the whole value when it holds a digit."""
        if not names_birth(context) or not any(c.isdigit() for c in text) or len(text) > 64:
            return None
        m = _WHOLE_DATE.fullmatch(text) or _DATE_IN.search(text)
        if m is not None:  # the date itself ("01.11.1942. Vertrag vom …": the rest is another sentence)
            return self.result(*m.span("v"), SCORE, "date under a birth key", by_key=True)
        if len(text.strip()) > 24:
            return None
        start = len(text) - len(text.lstrip())
        return self.result(start, len(text.rstrip()), SCORE, "value under a birth key", by_key=True)
