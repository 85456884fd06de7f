"""What a personal name looks like on the page, in any of the locales agents write: the shared guards.

``name_tokens`` says whether a string is written like a personal name — one to five words, each a
capitalised word of letters (``Jürgen``, ``Oğuz``, ``Min-jun``, ``O'Brien``, ``Al-Mansouri``) or a
lower-case particle (``van der``, ``de``, ``da``, ``bin``) — and ``product_like`` whether a span the
NER model called a person reads as a product or an identifier instead: a digit, an all-caps or
CamelCase word (``SKU``, ``PostgreSQL``, ``OpenShift``), a product head word (``Studio``, ``Cloud``,
``Pro``) or a role (``System Admin``, ``Support Team``), a single letter (``Model Y``) or a version number right after it (``Ubuntu 24.04``).
``PERSON_CUE_BEFORE`` are the salutations and honorifics that make even a single word a name.
"""

from __future__ import annotations

import re

PARTICLES = frozenset(
    {"van", "der", "den", "de", "da", "di", "del", "della", "dos", "das", "do", "von", "zu", "le", "la", "du",
     "bin", "ibn", "al", "el", "y", "e", "ter", "ten", "af", "st"}
)  # fmt: skip
_NAME_PREFIXES = ("Mc", "Mac", "Di", "De", "Le", "La", "Van", "Von", "Du", "O'", "O’", "D'", "D’")
PRODUCT_WORDS = frozenset(
    {"studio", "code", "server", "database", "cloud", "pro", "ultra", "max", "mini", "plus", "model", "watch",
     "phone", "pixel", "galaxy", "switch", "teams", "office", "service", "services", "management", "connect",
     "pi", "edition", "enterprise", "platform", "engine", "suite", "desktop", "mobile", "manager", "console",
     "api", "sdk", "app", "apps", "hub", "lab", "labs", "os", "db", "cli", "kit", "tools", "toolkit", "framework",
     "premiere", "express", "air", "book", "pad", "tab", "drive", "docs", "sheets", "analytics", "insights",
     "security", "shift", "stack", "compute", "storage", "network", "gateway", "registry", "pipeline", "runner",
     "cluster", "edge", "core", "lite", "one", "series", "latitude", "inspiron", "thinkpad", "surface",
     "redshift", "lambda", "functions", "kafka", "spark", "linux", "windows", "ubuntu", "debian", "android",
     # roles and machinery that sign and file things without being anyone: "Logged by System Admin"
     "admin", "administrator", "system", "bot", "automation", "team", "support", "user", "operator", "staff",
     "robot", "daemon", "scheduler", "agent", "assistant", "helpdesk", "desk", "department", "committee",
     "coordinator", "director", "officer", "engineer", "specialist", "lead", "head", "clerk", "representative",
     "consultant", "analyst", "developer", "designer", "secretary", "president", "accounts", "payable",
     "receivable", "billing", "sales", "finance", "operations", "customer", "care",
     # places and organisations whose names read like a person's: "Main Street Capital", "Noto Sans JP"
     "street", "road", "avenue", "boulevard", "capital", "bank", "group", "holdings", "partners", "journal",
     "times", "news", "records", "sans", "serif", "font", "inc", "ltd", "llc", "gmbh", "corp", "company",
     "university", "college", "school", "hospital", "clinic", "hotel", "airport", "station"}
)  # fmt: skip
# Makers whose name leads a product name ("Ford Ranger", "Dell Latitude"): first word of a span.
BRAND_WORDS = frozenset(
    {"apple", "google", "microsoft", "amazon", "aws", "azure", "dell", "samsung", "adobe", "oracle", "nintendo",
     "sony", "toyota", "honda", "ford", "tesla", "ibm", "intel", "cisco", "lenovo", "nvidia", "meta", "red",
     "jira", "atlassian", "salesforce", "slack", "zoom", "spotify", "netflix", "nissan", "bmw", "audi",
     "volkswagen", "hyundai", "kia", "xiaomi", "huawei", "asus", "acer", "logitech", "canon", "nikon",
     "philips", "siemens", "bosch", "sap", "vmware", "docker", "hashicorp", "mongodb", "elastic", "grafana",
     "github", "gitlab", "jetbrains", "mozilla", "ubuntu", "visual", "raspberry", "kafka", "apache", "datadog"}
)  # fmt: skip
# Software and shopping verbs before a span: what follows is a thing, not a person.
_THING_BEFORE = re.compile(
    r"(?i)\b(?:upgrad\w*|install\w*|deploy\w*|updat\w*|downgrad\w*|migrat\w*|restart\w*|configur\w*|"
    r"compar\w*|using|run|running|launch\w*|bought|buy|ordered|licen[cs]e[sd]?)\s+(?:the\s+|a\s+|an\s+)?$"
)
PERSON_CUE_BEFORE = re.compile(
    r"(?i)(?:\b(?:dear|hi|hello|hey|thanks|thank\s+you|mr|mrs|ms|miss|mx|dr|prof|herr|frau|hr|mme|mlle|"
    r"monsieur|madame|señor|señora|senor|senora|sr|sra|srta|don|doña|signor|signora|sig|liebe|lieber|"
    r"sehr\s+geehrter?|cher|chère|estimad[oa]|hola|bonjour|ciao|olá|ola)|\bm)\.?,?[ \t]+$"
)
_VERSION_AFTER = re.compile(r"[ \t]*(?:v?\d|\(\d)")


def _capitalised(word: str) -> bool:
    core = word.replace("-", "").replace("'", "").replace("’", "")
    if not core.isalpha() or not word[0].isupper():
        return False
    rest = word[1:]
    if not any(c.isupper() for c in rest):
        return True
    # McAllister, O'Brien, Al-Mansouri, Min-Jun: inner capitals only after a known prefix or a hyphen
    parts = re.split(r"[-'’]", word)
    if all(p[:1].isupper() and not any(c.isupper() for c in p[1:]) for p in parts if p):
        return True
    return any(
        word.startswith(p) and word[len(p) :][:1].isupper() and word[len(p) + 1 :].islower()
        for p in _NAME_PREFIXES
    )


def name_tokens(value: str) -> list[str] | None:
    """The words of ``value`` if it is written like a personal name (in capitals too: ``KENJI HAYASHI``), else
    None."""
    if value.isupper() and not any(c.isdigit() for c in value):
        value = value.title()
    words = value.split()
    if not 1 <= len(words) <= 5:
        return None
    if not all(_capitalised(w) or w.lower() in PARTICLES for w in words):
        return None
    if all(w.lower() in PARTICLES for w in words) or any(len(w) > 24 for w in words):
        return None
    return words


_NATIVE = re.compile(
    r"[\u4e00-\u9fff\u3040-\u30ff]{2,6}|[\uac00-\ud7a3]{2,4}|[\u0600-\u06ff]{2,}(?: [\u0600-\u06ff]{2,}){0,3}"
)


def native_name(value: str) -> bool:
    """A name in its own script, as a person-named field holds it: two to six kanji or kana (``山口典子``),
    two to four hangul syllables (``김민서``), one to four Arabic words (``محمد العلي``)."""
    return _NATIVE.fullmatch(value.strip()) is not None


def product_like(span: str, text: str, end: int, start: int | None = None) -> bool:
    """A span tagged PERSON that reads as a product, a brand or an identifier."""
    words = span.split()
    if not words or words[0].lower() in BRAND_WORDS:
        return True
    if start is not None and _THING_BEFORE.search(text, max(0, start - 30), start):
        return True
    if any(any(c.isdigit() for c in w) for w in words) or any(len(w) >= 2 and w.isupper() for w in words):
        return True
    if any(w.lower().strip(".,") in PRODUCT_WORDS for w in words) or any(
        len(w) == 1 and w.isalpha() for w in words
    ):
        return True
    if name_tokens(span) is None:
        return True
    return _VERSION_AFTER.match(text, end) is not None
