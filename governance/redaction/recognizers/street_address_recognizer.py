"""Street addresses: a house number and a street, in the conventions of several countries, or any value
under an address key.

Shapes (the street's kind word is what makes a number an address; each family is tried only where one
of its kind words occurs):

- number first, kind word last (US, UK, Canada, Australia, Ireland): ``149 N Lincoln Ave``,
  ``221B Baker Street``, ``12 High St, Flat 3``, ``4/27 Beach Road``;
- number first, kind word first (French, Belgian): ``54 rue des Martyrs``, ``7 bis, avenue Foch``;
- kind word first, number last (Spanish, Portuguese, Brazilian, Italian, Polish, Dutch):
  ``Rua das Laranjeiras, 138``, ``Calle de Alcalá 42``, ``Via Roma 15``, ``ul. Piotrkowska 102/51``;
- one word ending in its kind, number last (German, Dutch, Nordic): ``Hauptstraße 5a``,
  ``Keizersgracht 123``, ``Drottninggatan 45``, and ``Berliner Straße 12``;
- Japanese blocks: a district in romaji and its chōme-banchi-gō numbers (``Nishi-Shinjuku 6-28-9``,
  ``Roppongi 1-chome 4-5``), or written in kanji (``西新宿2丁目8-1``).

A unit after the street (``Apt 4B``, ``Suite 200``, ``Flat 3``, ``/51``) belongs to the address. Under a
key that names an address (``address``, ``street``, ``address_line1``, ``Anschrift``, ``endereço``; not
``ip_address``, ``email_address``, ``mac_address``) the whole value is one, whatever its shape, unless it
is a single word without a digit (``?address=Berlin`` looks a town up).

Libraries measured before writing this (one core, agent texts of one to three sentences): ``pyap`` finds
US, Canadian and British shapes only (one of five test shapes above) at ~3,900 texts/s, i.e. ~0.26 ms a
text before any prefilter; ``usaddress`` labels the tokens of a string already known to be an address (it
does not find one in prose) at ~3,100 texts/s; libpostal needs a 2 GB model. None fits: these patterns,
behind a prefilter on the kind words (one set test on the text's words, shared with other recognizers),
cost nothing on texts without a street word and cover the continental and Japanese shapes too.
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


_CAP = r"[A-ZÀ-ÖØ-ÞĀ-ſ\u1E00-\u1EFF][\w'’.\-]*"  # a capitalised word (or an initial: "N", "St.")
_LOW = r"(?:de|del|de\s+la|de\s+las|de\s+los|da|das|do|dos|di|della|dei|degli|des|du|de\s+l'|d'|la|le|les|van|der|den|y|e)"
# US, UK, Canada, Australia, Ireland: kind word last
_TRAILING_KINDS = vocabulary(
    "street st avenue ave av road rd boulevard blvd lane ln drive dr way court ct place pl terrace ter tce "
    "close crescent cres highway hwy parkway pkwy square sq circle cir trail trl row mews walk grove gardens "
    "gdns hill park parade pde esplanade quay wharf broadway alley plaza pike turnpike expressway expy loop"
)
# French, Belgian: kind word after the number
_FRENCH_KINDS = vocabulary(
    "rue avenue av boulevard bd place allée allee impasse chemin quai cours route passage square"
)
# Spanish, Portuguese, Italian, Polish, Dutch, Romanian: kind word first, number last
_LEADING_KINDS = vocabulary(
    "rua avenida av calle c carrer paseo plaza praça praca travessa largo alameda rodovia estrada camino ronda "
    "via viale piazza corso vicolo piazzale ul ulica al aleja pl plac os osiedle strada bulevardul calea"
)
# German, Dutch, Nordic: the street's name ends in its kind
_GLUED_ENDINGS = (
    "straße", "strasse", "str", "weg", "gasse", "allee", "platz", "ring", "damm", "ufer", "chaussee", "steig",
    "gracht", "laan", "straat", "plein", "kade", "singel", "dijk", "gatan", "gata", "vägen", "vej", "veien",
    "gate", "gade", "katu", "tie",
)  # fmt: skip
_UNIT = (
    r"(?i:,?[ \t]+(?:apt|apartment|suite|ste|unit|flat|floor|fl|room|rm|bldg|building|no|#|piso|andar|apto|"
    r"appt|bte|wohnung|lok|m)\.?[ \t]*#?[ \t]*[\dA-Z][\w\-/]{0,6})?"
)
_NUMBER = r"\d{1,6}[A-Za-z]?(?:[/\-]\d{1,5}[A-Za-z]?)?"
_WORDS = lambda kinds: r"(?:" + "|".join(sorted(set(kinds), key=len, reverse=True)) + r")"  # noqa: E731
_TRAILING = re.compile(
    r"(?<![\w/.\-])(?P<v>"
    + _NUMBER
    + r",?[ \t]+(?:"
    + _CAP
    + r"[ \t]+){0,4}?(?i:"
    + _WORDS(_TRAILING_KINDS)
    + r")\b\.?(?:[ \t]+(?:N|S|E|W|NE|NW|SE|SW)\b\.?)?"
    + _UNIT
    + r")"
)
_FRENCH = re.compile(
    r"(?<![\w/.\-])(?P<v>\d{1,4}(?:[ \t]?(?:bis|ter|[A-Z]))?,?[ \t]+(?i:"
    + _WORDS(_FRENCH_KINDS)
    + r")\.?[ \t]+"
    r"(?:(?:" + _LOW + r")[ \t]*)?" + _CAP + r"(?:[ \t]+(?:(?:" + _LOW + r")[ \t]+)?" + _CAP + r"){0,4})"
)
_LEADING = re.compile(
    r"(?<![\w])(?P<v>(?i:"
    + _WORDS(_LEADING_KINDS)
    + r")\.?[ \t]+(?:(?:"
    + _LOW
    + r")[ \t]+)?"
    + _CAP
    + r"(?:[ \t]+(?:(?:"
    + _LOW
    + r")[ \t]+)?"
    + _CAP
    + r"){0,4}?,?[ \t]+(?:n[º°o]\.?[ \t]*|nr\.?[ \t]*)?"
    + _NUMBER
    + r"(?![\w]))"
    + r"(?:"
    + _UNIT
    + r")?"
)
_GLUED = re.compile(
    r"(?<![\w])(?P<v>(?:"
    + _CAP
    + r"[ \t]+)?[A-ZÀ-ÖØ-Þ][\w\-]*?(?i:"
    + "|".join(_GLUED_ENDINGS)
    + r")\.?,?[ \t]+"
    + _NUMBER
    + r"(?![\w]))"
)
_SEPARATE_GERMAN = re.compile(
    r"(?<![\w])(?P<v>"
    + _CAP
    + r"[ \t]+(?:Straße|Strasse|Str\.|Weg|Gasse|Allee|Platz|Ring|Damm)[ \t]+"
    + _NUMBER
    + r"(?![\w]))"
)
_JAPANESE = re.compile(
    r"(?<![A-Za-z0-9_\-])(?P<v>(?P<w>[A-Za-zāōū]{2,16}(?:-[A-Za-zāōū]{2,16})?)[ \t]+"
    r"(?:\d{1,2}-chome[ \t,]+\d{1,3}-\d{1,4}|\d{1,2}-\d{1,3}-\d{1,4})(?![\w\-]))"
)
_SYLLABLE_CLUSTERS = frozenset({"sh", "ch", "ts", "ky", "gy", "ny", "hy", "my", "ry", "by", "py", "j", "f"})
_NOT_DISTRICTS = frozenset({"page", "range", "game", "rule", "note", "size", "type", "date", "time", "code",
                            "zone", "phase", "image", "stage", "issue", "one", "done", "make", "take", "use"})  # fmt: skip
_KANJI = re.compile(
    r"(?P<v>(?:[\u4e00-\u9fff]{1,6}[都道府県])?(?:[\u4e00-\u9fff]{1,6}[市区町村郡])*[\u4e00-\u9fff]{1,8}"
    r"\d{1,2}(?:丁目|-)\d{1,4}(?:番地?|-)\d{1,4}号?)"
)
# India: a flat or house number, the building's name, then the cross or main road ("4th Cross")
_INDIAN = re.compile(
    r"(?<![\w])(?P<v>(?i:flat|house|plot|door|villa)[ \t]*(?i:no\.?)?[ \t]*\d{1,5}[A-Za-z]?,[ \t]+"
    + _CAP
    + r"(?:[ \t]+"
    + _CAP
    + r"){0,3}(?:,[ \t]+\d{1,2}(?:st|nd|rd|th)[ \t]+(?i:cross|main|block|stage|phase|sector)"
    r"(?:[ \t]+(?i:road|rd))?)?)"
)
_INDIAN_SET = vocabulary("flat house plot door villa")
_DIGIT = re.compile(r"\d")
_TRAILING_SET = frozenset(_TRAILING_KINDS)
_FRENCH_SET = frozenset(_FRENCH_KINDS)
_LEADING_SET = frozenset(_LEADING_KINDS) - {"c"}
_JAPANESE_CUE = re.compile(r"\d-\d{1,3}")
ADDRESS_KEY_WORDS = KIND_WORDS["STREET_ADDRESS"] | {"addressline", "address2", "地址", "주소", "addr"}
_NOT_POSTAL = frozenset({"ip", "email", "mail", "mac", "wallet", "server", "host", "url", "web", "remote",
                         "bind", "listen", "memory", "contract", "btc", "eth", "base", "return", "ipv4", "ipv6",
                         "proxy", "gateway", "node", "peer", "socket", "broker", "hex", "mem", "reply"})  # fmt: skip
_IP_LIKE = re.compile(r"^[\d.:/a-fA-F\[\]]+$")


def romaji(word: str) -> bool:
    """Written like a Japanese name in romaji: only its letters, open syllables (or a final "n"), and
    consonant clusters only of a doubled consonant, an "n" before another, or a digraph (``sh``, ``ky``)."""
    w = word.lower().replace("-", "").translate(_MACRONS)
    if not w or w in _NOT_DISTRICTS or set(w) - _ROMAJI_LETTERS or w[-1] not in "aeioun":
        return False
    for cluster in re.findall(r"[^aeiou]+", w):
        if len(cluster) > 1 and not (
            cluster in _SYLLABLE_CLUSTERS
            or cluster[0] == "n"
            or (cluster[0] == cluster[1] and len(cluster) <= 3)
            or (len(cluster) == 3 and cluster[1:] in _SYLLABLE_CLUSTERS and cluster[0] in "nt")
        ):
            return False
    return True


_MACRONS = str.maketrans("āōū", "aou")
_ROMAJI_LETTERS = frozenset("aeiounkgsztdhbpmyrwfjc")


# ``_glued`` as triggers: an ending at the end of a letter run of five or more (the run's other characters
# are letters or numerals, its end is no letter)
_GLUED_TRIGGERS = tuple(
    r"[\p{L}\p{N}]" * max(0, 5 - n)
    + any_of([e for e in _GLUED_ENDINGS if len(e) == n], caseless=True)
    + r"(?:\P{L}|$)"
    for n in sorted({len(e) for e in _GLUED_ENDINGS})
)


def _glued(words: frozenset[str]) -> bool:
    return any(len(w) > 4 and w.endswith(_GLUED_ENDINGS) for w in words)


def names_address(context: list[str] | None) -> bool:
    """A key that names a postal address (``shipping_address``, ``Anschrift``), not a network one."""
    for c in context or ():
        words = set(key_words(c))
        joined = "".join(key_words(c))
        if (words & ADDRESS_KEY_WORDS or joined in ADDRESS_KEY_WORDS) and not words & _NOT_POSTAL:
            return True
    return False


class StreetAddressRecognizer(SluiceLocalRecognizer):
    ENTITY: ClassVar[str] = "STREET_ADDRESS"
    # a kind word of a family, a glued German/Dutch/Nordic ending, a Japanese block number or kanji mark
    TRIGGER_PATTERNS = (
        whole_words(_TRAILING_SET | _FRENCH_SET | _LEADING_SET | _INDIAN_SET),
        *_GLUED_TRIGGERS,
        _JAPANESE_CUE.pattern,
        "丁目|番|[都道府県市区町村]",
    )
    TRIGGER_ALSO = (r"\d",)

    VERSION: ClassVar[str] = "1"

    def __init__(self, supported_language: str = "en") -> None:
        super().__init__(supported_language, version=self.VERSION)

    def _families(self, text: str) -> list[re.Pattern[str]]:
        words = letter_words(text)
        picked: list[re.Pattern[str]] = []
        if not words.isdisjoint(_TRAILING_SET):
            picked.append(_TRAILING)
        if not words.isdisjoint(_FRENCH_SET):
            picked.append(_FRENCH)
        if not words.isdisjoint(_LEADING_SET):
            picked.append(_LEADING)
        if not words.isdisjoint(_INDIAN_SET):
            picked.append(_INDIAN)
        if _glued(words):
            picked += [_GLUED, _SEPARATE_GERMAN]
        if "-" in text and _JAPANESE_CUE.search(text):
            picked.append(_JAPANESE)
        if "丁目" in text or "番" in text or ("-" in text and any(c in text for c in "都道府県市区町村")):
            picked.append(_KANJI)
        return picked

    def keyed(self, context: list[str]) -> bool:
        return names_address(context)

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        if names_address(context):
            return True
        if _DIGIT.search(text) is None:
            return False
        return bool(self._families(text))

    def analyze(
        self, text: str, entities: list[str] | None = None, nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        spans: list[tuple[int, int]] = []
        for rx in self._families(text):
            for m in rx.finditer(text):
                if rx is _JAPANESE and not all(romaji(w) for w in m["w"].split("-")):
                    continue
                s, e = m.span("v")
                value = text[s:e].rstrip(" ,.")
                e = s + len(value)
                if not any(c.isdigit() for c in value) or any(s < b and a < e for a, b in spans):
                    continue
                spans.append((s, e))
        return [self.result(s, e, SCORE, "street address") for s, e in spans]

    def from_key(self, text: str, context: list[str] | None) -> RecognizerResult | None:
        """The whole value under a key that names a postal address (letters in it, not a network address)."""
        stripped = text.strip()
        if not names_address(context) or len(stripped) < 4 or len(stripped) > 300:
            return None
        if "@" in stripped or _IP_LIKE.match(stripped) or not any(c.isalpha() for c in stripped):
            return None
        if " " not in stripped and not any(c.isdigit() for c in stripped):
            return None  # one word ("?address=Berlin"): a town looked up, not someone's address
        start = len(text) - len(text.lstrip())
        return self.result(start, start + len(stripped), SCORE, "under an address key", by_key=True)
