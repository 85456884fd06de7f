"""PERSON by cue: a name written where a person is addressed, named or signs, in several languages.

The NER model misses many names it was not trained on (``Oluwaseun Adeyemi``, ``Nguyen Van Anh``),
yet the text around a name says what it is, whatever the locale: a salutation or honorific before it
(``Dear``, ``Herr``, ``Mme``, ``El señor``), a phrase that introduces a person (``spoke with``,
``assigned … to``, ``reported by``, ``cc:``, ``le client``, ``der Kunde``) with the names listed after it, a verb of speech or contact after it (``… called``,
``… agreed``, ``… a demandé``), or a sign-off line above it (``Best regards,`` / ``Mit freundlichen
Grüßen``). The words after or before the cue must be written like a personal name (``name_shape``)
and not like a product.
"""

from __future__ import annotations

import re

from presidio_analyzer import RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts

from governance.redaction.recognizers.base import SluiceLocalRecognizer, letter_words, lowered
from governance.redaction.recognizers.name_shape import PARTICLES, name_tokens, native_name, product_like

SCORE = 0.85
_WORD = re.compile(r"[^\W\d_][^\W\d_'’\-]*(?:[-'’][^\W\d_]+)*")
_BEFORE = re.compile(
    r"(?i)(?:\b(?:dear|hi|hello|hey|mr|mrs|ms|miss|mx|dr|prof|herr|frau|mme|mlle|monsieur|madame|señora?|"
    r"senora?|sr|sra|srta|doña|signora?|sig|liebe[r]?|sehr\s+geehrter?|cher|chère|estimad[oa]|"
    r"spoke\s+(?:with|to)|speaking\s+with|talked\s+(?:to|with)|met\s+with|meeting\s+with|call\s+with|"
    r"assigned\s+(?:the\s+\w+\s+|it\s+)?to|escalated\s+(?:it\s+)?to|handed\s+(?:it\s+)?over\s+to|attn|"
    r"le\s+client|la\s+cliente|el\s+cliente|la\s+clienta|der\s+kunde|die\s+kundin|il\s+cliente|o\s+cliente|"
    r"the\s+(?:customer|client|patient|applicant|caller|employee|tenant|guest)|rufen\s+sie|"
    r"(?:reported|opened|filed|raised|logged|submitted|created|requested|approved|reviewed|signed|written)\s+by|"
    r"on\s+behalf\s+of|cc|assignee|reporter|reviewers?|contact\s+person)\b|\bm)\.?[,:]?[ \t]+"
)
# A label or an introduction before a name: "Full name:", "Surname: HAYASHI", "Passenger:", "my name is",
# "je m'appelle", "me llamo"
_LABEL = re.compile(
    r"(?i)\b(?:(?:(?:full|given|first|last|family|legal|maiden|middle|patient|customer|guest|employee|contact|"
    r"account|card)[ \t]+)?(?:names?|holder)|surname|nombre|nom|pr[ée]nom|vorname|nachname|apellidos?|nome|"
    r"sobrenome|passenger|travell?er|titular|nom[ \t]+de[ \t]+famille|beneficiary|payee|recipient|contact|担当者|氏名|姓名|名前|이름)[ \t]*[:：][ \t]*"
    # a printed document's label above its value: "Surname/Nom" then the name on the next line
    r"|(?m:^[ \t]*(?:surname|given[ \t]+names?|nom|pr[ée]noms?|apellidos|nombres)(?:[ \t]*/[^\n]{0,30})?[ \t]*\r?\n[ \t]*)"
    r"|\b(?:my[ \t]+name[ \t]+is|je[ \t]+m'appelle|me[ \t]+llamo|ich[ \t]+hei(?:ß|ss)e|mi[ \t]+chiamo|"
    r"meu[ \t]+nome[ \t]+é|chamo-me|name[ \t]+is)[ \t]+"
)
# A name in its own script after a label: "contact: 岡田結衣", "이름: 김민서"
_NATIVE_AFTER = re.compile(
    r"[\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7a3]{2,6}(?![\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7a3])"
    r"|[\u0600-\u06ff]{2,}(?: [\u0600-\u06ff]{2,}){0,3}"
)
# Between two names of one list: "Siobhan O'Connor and Nguyen Van An", "Ana Souza, Li Wei".
_LIST_JOIN = re.compile(r"[ \t]*(?:,|&|/|\band\b|\bund\b|\bet\b|\by\b|\be\b)[ \t]*")
_AFTER = re.compile(
    r"(?i)[ \t]*,?[ \t]*(?:called|phoned|emailed|wrote|asked|agreed|said|says|complained|requested|reported|"
    r"confirmed|mentioned|replied|wants|needs|is\s+on\s+call|was\s+discharged|signed|approved|"
    r"hat\s+angerufen|rief|a\s+appelé|a\s+demandé|llamó|ha\s+llamado|pidió)\b"
)
_SIGN_OFF = re.compile(
    r"(?i)(?:best\s+regards|kind\s+regards|regards|cheers|sincerely|thanks|many\s+thanks|best|"
    r"mit\s+freundlichen\s+grüßen|viele\s+grüße|cordialement|bien\s+à\s+vous|saludos|atentamente|"
    r"cordiali\s+saluti|grazie|atenciosamente)[,!.]?[ \t]*\r?\n[ \t]*"
)
_TRIGGERS = re.compile(r"[A-ZÀ-ÖØ-ÞĀ-Ž][a-zß-ÿ]")
# One word of every cue above (its rarest), lower case: a text holding none of them has no cue. The
# nouns of "the customer" / "le client" are common on their own, so they count only after an article.
_CUE_WORDS = frozenset(
    {
        "dear", "hi", "hello", "hey", "mr", "mrs", "ms", "miss", "mx", "dr", "prof", "herr", "frau", "mme",
        "mlle", "monsieur", "madame", "señor", "señora", "senor", "senora", "sr", "sra", "srta", "doña",
        "signor", "signora", "sig", "liebe", "lieber", "sehr", "cher", "chère", "estimado", "estimada",
        "spoke", "speaking", "talked", "met", "meeting", "call", "assigned", "escalated", "handed", "attn",
        "rufen", "m", "opened", "filed", "raised", "logged", "submitted", "created", "reviewed", "written",
        "behalf", "cc", "assignee", "reporter", "reviewer", "reviewers", "person",
        "regards", "cheers", "sincerely", "thanks", "best", "grüßen", "grüße", "cordialement", "vous",
        "saludos", "atentamente", "saluti", "grazie", "atenciosamente",
        "called", "phoned", "emailed", "wrote", "asked", "agreed", "said", "says", "complained", "requested",
        "reported", "confirmed", "mentioned", "replied", "wants", "needs", "discharged", "signed",
        "approved", "angerufen", "rief", "appelé", "demandé", "llamó", "llamado", "pidió",
        "name", "names", "holder", "surname", "nombre", "nom", "prénom", "prenom", "vorname", "nachname",
        "apellido", "apellidos", "nome", "sobrenome", "passenger", "traveller", "traveler", "titular", "llamo",
        "appelle", "heiße", "heisse", "chiamo", "chamo", "contact", "beneficiary", "payee", "recipient", "prénoms",
    }
)  # fmt: skip
_CUE_NOUNS = frozenset(
    {"customer", "client", "patient", "applicant", "caller", "employee", "tenant", "guest", "cliente",
     "clienta", "kunde", "kundin"}
)  # fmt: skip
_ARTICLES = frozenset({"the", "le", "la", "el", "il", "o", "der", "die"})
_ARTICLE_NOUN = re.compile(
    r"(?<!\w)(?:" + "|".join(sorted(_ARTICLES)) + r")\s+(?:" + "|".join(sorted(_CUE_NOUNS)) + r")(?!\w)"
)


def has_cue_word(text: str) -> bool:
    """Whether ``text`` holds a word of some cue: the necessary condition the cue patterns are run on."""
    words = letter_words(text)
    if not words.isdisjoint(_CUE_WORDS):
        return True
    if words.isdisjoint(_CUE_NOUNS) or words.isdisjoint(_ARTICLES):
        return False
    return _ARTICLE_NOUN.search(lowered(text)) is not None


def _name_after(text: str, pos: int, min_words: int = 1) -> tuple[int, int] | None:
    """The longest name-shaped run of 1-4 words starting at ``pos`` (particles inside allowed)."""
    words: list[tuple[int, int]] = []
    i = pos
    while len(words) < 5:
        m = _WORD.match(text, i)
        if m is None:
            break
        w = m.group()
        if not (w[0].isupper() or (w.lower() in PARTICLES and words)):
            break
        words.append(m.span())
        gap = re.match(r"[ \t]+", text[m.end() :])
        if gap is None:
            break
        i = m.end() + gap.end()
    while words and text[words[-1][0] : words[-1][1]].lower() in PARTICLES:
        words.pop()
    if len(words) < min_words:
        return None
    start, end = words[0][0], words[-1][1]
    span = text[start:end]
    if span.isupper() and len(words) < 2 and min_words > 0 and not _labelled(text, start):
        return None  # one word in capitals after "Hi": a shout, not a name
    shown = span.title() if span.isupper() else span
    if name_tokens(span) is None or product_like(shown, text, end, start):
        return None
    return start, end


def _labelled(text: str, start: int) -> bool:
    """A label ends right before ``start``: on its line, or alone on the line above."""
    line_start = text.rfind("\n", 0, max(0, text.rfind("\n", 0, start))) + 1
    return any(m.end() == start for m in _LABEL.finditer(text, line_start, start))


def _name_before(text: str, end: int) -> tuple[int, int] | None:
    """A name of 2-4 words ending at ``end``."""
    line_start = text.rfind("\n", 0, end) + 1
    head = text[line_start:end]
    for m in re.finditer(r"(?:(?<=[\s,;:(])|^)[^\W\d_]", head):
        found = _name_after(text, line_start + m.start(), min_words=2)
        if found and found[1] == end:
            return found
    return None


def _loose(rx: re.Pattern[str]) -> str:
    """A cue pattern as a trigger that matches wherever it does: without its word boundaries (RE2's are
    ASCII only), with whitespace as wide as Python's."""
    return rx.pattern.replace(r"\b", "").replace(r"\s", r"[\s\p{Z}\x{85}\x{1c}-\x{1f}]")


class PersonCueRecognizer(SluiceLocalRecognizer):
    ENTITY = "PERSON"
    # ``may_match`` needs one of the cue patterns to match: they are the triggers, loosened for RE2
    TRIGGER_PATTERNS = tuple(_loose(rx) for rx in (_BEFORE, _SIGN_OFF, _AFTER, _LABEL))
    PREFILTER = _TRIGGERS

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        """Only texts with a cue reach Presidio (a call costs more than these searches); the cue words
        are looked up as a set first, the cue patterns run only where one occurs."""
        return (
            (
                _TRIGGERS.search(text) is not None
                or (not text.isascii() and _NATIVE_AFTER.search(text) is not None)
            )
            and has_cue_word(text)
            and any(rx.search(text) for rx in (_BEFORE, _SIGN_OFF, _AFTER, _LABEL))
        )

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        spans: set[tuple[int, int]] = set()
        for rx in (_BEFORE, _SIGN_OFF, _LABEL):
            for m in rx.finditer(text):
                native = _NATIVE_AFTER.match(text, m.end()) if rx is _LABEL else None
                if native is not None and native_name(native.group()):
                    spans.add(native.span())
                    continue
                found = _name_after(text, m.end())
                while found:  # and the names listed with it (of two words or more)
                    spans.add(found)
                    join = _LIST_JOIN.match(text, found[1])
                    found = (
                        _name_after(text, join.end(), min_words=2) if join and join.end() > found[1] else None
                    )
        for m in _AFTER.finditer(text):
            found = _name_before(text, m.start())
            if found:
                spans.add(found)
        return [self.result(s, e, SCORE) for s, e in sorted(spans)]
