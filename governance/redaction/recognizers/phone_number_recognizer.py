"""Phone numbers validated by libphonenumber: ``+CC`` international numbers and national formats.

Replaces Presidio's ``PhoneRecognizer`` (score 0.4, below the default threshold unless context words
are found, which the no-op NLP engine cannot find; recall ~0.7). Here a number that libphonenumber
calls *valid* scores 0.75 when it is written like a phone number (``+`` prefix, or grouped with spaces,
dashes, dots or parentheses); a bare digit run (``2125550143``) is too easily an id and needs a phone
word shortly before it in the text (``call``, ``phone``, ``tel`` …) or a phone-named JSON key.
National numbers outside North America must carry their trunk prefix (``020 7946 0958`` for GB), so
``1712345678`` (a timestamp) is not read as a GB number; a number glued into a longer token
(``ORD-2026-502799``) or shaped like a dotted quad (an IPv4 address) is not a phone number.

Validity is not what makes a phone number personal data: ``(809) 555-0142``, ``(123) 555-0199`` and
``(211) 555-0100`` are read as phone numbers by anyone, whatever their area code. So two shapes count
too, valid or not: the North American shape anywhere (``(NXX) NXX-XXXX``, ``+1 NXX NXX XXXX``,
``NXX-NXX-XXXX`` with one separator throughout), and in a contact context (a phone word shortly
before it in any of several languages, or a JSON key / CSV column naming a phone or contact) any
plausible national or international format: 7–15 digits in groups, optionally after ``+``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import ClassVar

import phonenumbers
from phonenumbers.phonemetadata import PhoneMetadata
from presidio_analyzer import RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts

from governance.redaction.key_context import KIND_WORDS
from governance.redaction.recognizers.base import SluiceLocalRecognizer
from governance.redaction.recognizers.phone_regions import NO_TRUNK_PREFIX, guess_regions

# libphonenumber compiles its metadata patterns through ``re.compile`` on every use (a lookup in the
# ``re`` module's cache, a tenth of the matcher's time); kept compiled once instead (its public switch)
phonenumbers.enable_pattern_cache()

_NANP = frozenset({"US", "CA"})
_PHONE_WORDS = re.compile(
    r"(?i)(?:\b(?:phone|tel|telephone|mobile|cell|call|fax|whatsapp|sms|text\s+me|dial|contact|reach\s+(?:me|us)|"
    r"callback|voicemail|ring|handy|mobil|kontakt|dzwoni[ćc]|zadzwo[ńn]|dzwo[ńn]|komórka|komorka)\b|telefon|téléphone|teléfono|telefone|rappel|llám|llama|"
    r"numéro|número|nummer|ruf|portable|celular|móvil|appel|joindre|chiam|contatt|電話|携帯|电话|手机|전화|телефон"
    # a signature's one-letter labels at the start of a line: "M: …", "W: …", "T. …", "Ph: …"
    r"|(?m:^[ \t]*(?:[mtwpohf]|ph|mob|tél|off|dir)[ \t]*[.:]))"
)
# (NXX) NXX-XXXX, +1 NXX NXX XXXX, NXX-NXX-XXXX / NXX.NXX.XXXX (one separator throughout).
_NANP_SHAPE = re.compile(
    r"(?<![\w+.\-/])(?:(?:\+1|1)[ .\-]?)?(?:\(\d{3}\)[ .\-]?\d{3}[ .\-]\d{4}|\d{3}([ .\-])\d{3}\1\d{4})(?![\w\-]|\.\d)"
    r"|(?<![\w+.\-/])\+1[ .\-]?\d{3}[ .\-]?\d{3}[ .\-]?\d{4}(?![\w\-]|\.\d)"
)
# Any grouped number: +CC or (area), then 7-15 digits in groups of 1-5.
_GROUPED = re.compile(r"(?<![\w+.\-/])(?:\+|00)?\(?\d{1,5}\)?(?:[ .\-/]?\(?\d{1,5}\)?){1,6}(?![\w\-]|\.\d)")
# a date or time inside the run; a day-first or month-first date only when it is the whole run (five
# groups "06-77-42-08-60" are a French number, not a date followed by digits)
_DATE_OR_TIME = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}:\d{2}")
_SHORT_DATE = re.compile(r"\(?\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}\)?")
_TRUNK_CANDIDATE = re.compile(r"(?<![\d+])\(?0\d")  # national numbers outside NANP start with 0
_DOTTED_QUAD = re.compile(r"\d{1,5}(?:\.\d{1,5}){3,}")  # IPv4 addresses, OIDs, four-part versions
_DOTTED_PAIRS = re.compile(r"0\d(?:\.\d\d){3,5}")  # but 09.25.58.27.52 is a number written in pairs


def _dotted_id(raw: str) -> bool:
    """An address, OID or version written with dots, not a phone number written in dotted pairs."""
    return _DOTTED_QUAD.fullmatch(raw) is not None and _DOTTED_PAIRS.fullmatch(raw) is None


_KEY_WORDS = KIND_WORDS["PHONE_NUMBER"]


# A run that could hold a phone number: digits with the separators numbers are written with, and a leading
# + or (. libphonenumber's matcher scans a whole text with one very large pattern; run on these runs only
# (plus a margin, for its own checks of what surrounds a number) it finds the same numbers, ~2x sooner.
_DIGIT_RUN = re.compile(r"[+(]*\d[\d \t().\-/]{5,}\d\)?")
_MARGIN = 3


def _transformed(metadata: PhoneMetadata) -> bool:
    return bool(metadata.national_prefix_transform_rule)


@lru_cache(maxsize=1)
def _fewest_international_digits() -> int:
    """The fewest digits after an international prefix that libphonenumber can call a valid number: a
    country code and a national number of the shortest length of any region of that code (``+49`` and a
    four-digit German number: 6), less the digits that the national prefix transform rule of the code's
    main region (the metadata a number parsed with its country code is read with) inserts."""
    fewest = 99
    for code, regions in phonenumbers.COUNTRY_CODE_TO_REGION_CODE.items():
        lengths = []
        for region in regions:
            md = (
                PhoneMetadata.metadata_for_nongeo_region(code)
                if region == phonenumbers.REGION_CODE_FOR_NON_GEO_ENTITY
                else PhoneMetadata.metadata_for_region(region)
            )
            if md is not None and md.general_desc.possible_length:
                lengths.append(min(md.general_desc.possible_length))
        if not lengths:
            continue
        main = PhoneMetadata.metadata_for_region(phonenumbers.region_code_for_country_code(code))
        rule = (main.national_prefix_transform_rule or "") if main is not None else ""
        inserted = len(re.sub(r"\\\d|\$\d", "", rule))
        fewest = min(fewest, len(str(code)) + min(lengths) - inserted)
    return fewest


@lru_cache(maxsize=64)
def fewest_digits(region: str) -> int:
    """The fewest digits a number libphonenumber calls valid for ``region`` is written with, where no
    ``+`` is written: a national number of the shortest length of any region of its country code (a number
    read in ``US`` may be valid in ``CA``), or the region's international prefix (when it is a plain digit
    string) and an international number (``_fewest_international_digits``).
    0 where a national prefix transform rule may insert digits (the region's numbers can be written
    shorter than they are): no bound."""
    md = PhoneMetadata.metadata_for_region(region)
    if md is None or _transformed(md):
        return 0
    # validity is decided against every region of the country code (a 7-digit number is valid in CA)
    lengths = []
    for other in phonenumbers.COUNTRY_CODE_TO_REGION_CODE.get(md.country_code, ()):
        other_md = PhoneMetadata.metadata_for_region(other)
        if other_md is None or not other_md.general_desc.possible_length:
            return 0
        lengths.append(min(other_md.general_desc.possible_length))
    if not lengths:
        return 0
    idd = md.international_prefix or ""
    idd_digits = len(idd) if idd.isdigit() else 0
    return min(min(lengths), idd_digits + _fewest_international_digits())


def digit_runs(text: str) -> list[tuple[int, str, int]]:
    """(offset, chunk, digits) of each run that could hold a phone number, with its margin: the chunk's
    digit count, or -1 where it holds a plus sign. Found once per text, for every region asked."""
    runs: list[tuple[int, str, int]] = []
    for run in _DIGIT_RUN.finditer(text):
        lo, hi = max(0, run.start() - _MARGIN), min(len(text), run.end() + _MARGIN)
        chunk = text[lo:hi]
        plus = "+" in chunk or "\uff0b" in chunk
        runs.append((lo, chunk, -1 if plus else sum(c.isdigit() for c in chunk)))
    return runs


def valid_numbers(
    text: str, region: str, runs: list[tuple[int, str, int]] | None = None
) -> Iterator[tuple[int, int, str]]:
    """(start, end, raw text) of each number libphonenumber calls valid for ``region`` (in the
    ``digit_runs`` of ``text``, found here when not given). A run (with its margin) holding no plus sign
    and fewer digits than any valid number of the region is written with (``fewest_digits``: dates,
    amounts, eight-digit ids in the US) cannot hold one: the matcher is not asked."""
    need = fewest_digits(region)
    for lo, chunk, digits in digit_runs(text) if runs is None else runs:
        if need and 0 <= digits < need:
            continue
        for start, end, raw in _matches(chunk, region):
            yield lo + start, lo + end, raw


@lru_cache(maxsize=4096)
def _matches(chunk: str, region: str) -> tuple[tuple[int, int, str], ...]:
    """libphonenumber's valid numbers in one digit run (with its margin), remembered: a conversation repeats
    its numbers turn after turn, and the matcher is the costliest step of phone recognition."""
    return tuple(
        (m.start, m.end, m.raw_string)
        for m in phonenumbers.PhoneNumberMatcher(chunk, region, leniency=phonenumbers.Leniency.VALID)
    )


def _inside_token(text: str, start: int, end: int) -> bool:
    """Part of a longer token (``ORD-2026-502799``, ``build_2125550143x``): an id, not a phone number."""
    before = text[max(0, start - 2) : start]
    after = text[end : end + 2]
    joined_before = bool(before) and (
        before[-1].isalnum() or (len(before) == 2 and before[-1] in "-_/." and before[0].isalnum())
    )
    joined_after = bool(after) and (
        after[0].isalnum()
        or after[0] == "_"
        or (len(after) == 2 and after[0] in "-_/" and after[1].isalnum())
    )
    return joined_before or joined_after


def epoch_like(raw: str) -> bool:
    """A bare run of 10 or 13 digits that reads as a Unix time in seconds or milliseconds (2001-2036). No
    numbering plan has ten-digit national numbers starting with 1, nor thirteen-digit ones."""
    if not raw.isdigit() or len(raw) not in (10, 13):
        return False
    seconds = int(raw[:10])
    return 1_000_000_000 <= seconds < 2_100_000_000


def isbn_like(raw: str, text: str, start: int) -> bool:
    """An ISBN, not a phone number: 13 digits from 978/979 whose ISBN-13 check digit holds, or any number
    right after the word ISBN."""
    if "ISBN" in text[max(0, start - 12) : start].upper():
        return True
    digits = [ord(c) - 48 for c in raw if c.isdigit()]
    if len(digits) != 13 or digits[:2] != [9, 7] or digits[2] not in (8, 9):
        return False
    return sum(d * (3 if i % 2 else 1) for i, d in enumerate(digits)) % 10 == 0


# Regions tried for a national number (a trunk 0, or three digit groups) the text gives no region for
FALLBACK_REGIONS = ("GB", "NG", "AU", "IN", "PL", "DE", "FR", "IE")


def national_elsewhere(raw: str) -> bool:
    """Valid as a national number of one of ``FALLBACK_REGIONS``: ``07033408304`` (Nigeria), ``08 9050
    6168`` (Australia), ``61 859 88 80`` (Poland). An ISBN-10 is not one."""
    digits = "".join(c for c in raw if c.isdigit())
    if len(digits) == 10 and raw.count("-") == 3 and _isbn10(digits):
        return False
    for region in FALLBACK_REGIONS:
        try:
            if phonenumbers.is_valid_number(phonenumbers.parse(raw, region)):
                return True
        except phonenumbers.NumberParseException:
            return False
    return False


def _isbn10(digits: str) -> bool:
    return sum(int(d) * (10 - i) for i, d in enumerate(digits)) % 11 == 0


def _overlaps(spans: dict[tuple[int, int], float], start: int, end: int) -> bool:
    return any(s < end and start < e for s, e in spans)


class PhoneNumberRecognizer(SluiceLocalRecognizer):
    ENTITY: ClassVar[str] = "PHONE_NUMBER"
    SCORE: ClassVar[float] = 0.75
    # a bare number under a phone-named JSON key (``{"mobile": "2125550143"}``) is a phone number
    KEY_CONTEXT = _KEY_WORDS
    KEY_CONTEXT_SCORE = SCORE
    BARE_SCORE: ClassVar[float] = 0.4
    PREFILTER = re.compile(r"\d[\d \t().\-/]{5,}\d")
    NEEDS_NUMBER_RUN = True
    VERSION: ClassVar[str] = "3"

    def __init__(self, regions: list[str] | None = None, supported_language: str = "en") -> None:
        self.regions = list(regions or ["US"])
        super().__init__(
            supported_language,
            context=["phone", "telephone", "mobile", "cell", "call", "fax"],
            version=self.VERSION,
        )

    def analyze(
        self, text: str, entities: list[str] | None = None, nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        spans: dict[tuple[int, int], float] = {}
        cued = guess_regions(text)
        guessed = [r for r in cued if r not in self.regions]
        runs = digit_runs(text)
        trunk: bool | None = None
        for i, region in enumerate(self.regions + guessed):
            no_trunk = region in NO_TRUNK_PREFIX and i >= len(self.regions)
            if i and region not in _NANP and not no_trunk:
                if trunk is None:
                    trunk = _TRUNK_CANDIDATE.search(text) is not None
                if not trunk:
                    continue  # +CC numbers were found by the first region's pass already
            for start, end, raw in valid_numbers(text, region, runs):
                if _dotted_id(raw.strip("[]() ")) or _inside_token(text, start, end):
                    continue
                if isbn_like(raw, text, start):
                    continue
                international = raw.startswith("+") or raw.startswith("00")
                worded = _PHONE_WORDS.search(text, max(0, start - 40), start) is not None
                # a country without a trunk prefix: written in groups, or named a phone number
                national = raw.lstrip("(").startswith("0") or (
                    no_trunk and (worded or any(c in raw for c in " -."))
                )
                if not international and region not in _NANP and not national:
                    continue
                span = (start, end)
                if spans.get(span) == self.SCORE:
                    continue
                formatted = international or any(c in raw for c in " -.()/")
                # a national number with its trunk 0 (ten or eleven digits: no id is written so) or in a text
                # that names its country needs no phone word
                placed = national and not no_trunk and (region in cued or 10 <= len(raw) <= 11)
                if formatted or placed or worded:
                    spans[span] = self.SCORE
                else:
                    spans[span] = self.BARE_SCORE
        for m in _NANP_SHAPE.finditer(text):
            if isbn_like(m.group(), text, m.start()):
                continue
            if not _inside_token(text, m.start(), m.end()) and not _overlaps(spans, m.start(), m.end()):
                spans[m.span()] = self.SCORE
        for m in _GROUPED.finditer(text):
            raw = m.group()
            digits = sum(c.isdigit() for c in raw)
            if (
                not 7 <= digits <= 15
                or _DATE_OR_TIME.search(raw)
                or _SHORT_DATE.fullmatch(raw)
                or _dotted_id(raw.strip("()"))
            ):
                continue
            if _overlaps(spans, m.start(), m.end()) or _inside_token(text, m.start(), m.end()):
                continue
            if isbn_like(raw, text, m.start()):
                continue
            worded = _PHONE_WORDS.search(text, max(0, m.start() - 40), m.start()) is not None
            if worded and epoch_like(raw):  # "phone …, ts 1717171717171": a clock reading, not a number
                worded = False
            if not worded and 9 <= digits <= 11 and (raw[0] in "0(" or raw.count(" ") >= 2):
                worded = national_elsewhere(raw)
            spans[m.span()] = self.SCORE if worded and (digits >= 8 or raw[0] == "+") else self.BARE_SCORE
        return [self.result(s, e, score) for (s, e), score in spans.items()]
