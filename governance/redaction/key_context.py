"""What a key says about its value: the vocabulary that turns a field name into a redaction context.

A value's own key (``{"db_password": …}``, ``DB_PASSWORD=…``, a CSV column header) or a sibling that
names it (``{"field": "db_url_password", "value": …}``) tells more than the value's shape. This module
holds the one vocabulary for that: ``key_words`` splits any key style (``snake_case``, ``camelCase``,
``kebab-case``, ``SCREAMING_CASE``) into words, ``names_secret`` / ``names_kind`` classify them, and
``keyed_spans`` finds the ``key = value`` pairs written in text (``.env`` and INI/TOML/YAML lines,
Python/JS dict literals, HTTP headers, ``key=value`` query and command-line arguments, CSV cells under
their header) so each value can be analysed with its key as context, as JSON values are.

Keys whose last word says the value is *about* a secret rather than the secret (``token_count``,
``password_policy``, ``secret_name``, ``max_tokens``) name nothing.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import NamedTuple

from governance.redaction.sql_cells import sql_cells

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SPLIT = re.compile(r"[\W_]+")  # any script: "contraseña", "パスワード" stay words

SECRET_WORDS = frozenset(
    {"password", "passwd", "pwd", "passphrase", "secret", "secrets", "credential", "credentials", "apikey",
     "authorization", "passcode", "pin", "privatekey", "accountkey", "sharedkey", "hmac", "dsn", "cvv", "cvc",
     "cvv2", "cvc2", "otp", "totp", "pw", "psk", "dockerconfigjson", "dockercfg",
     # "password" in other languages (a key is one word: "mot_de_passe" is checked joined)
     "passwort", "kennwort", "contraseña", "contrasena", "senha", "motdepasse", "mdp", "wachtwoord", "hasło",
     "haslo", "lösenord", "losenord", "passord", "adgangskode", "salasana", "heslo", "jelszó", "jelszo", "şifre",
     "sifre", "parolă", "пароль", "密码", "密碼", "パスワード", "비밀번호", "암호"}
)  # fmt: skip
# A last word that ends in one of these names a secret even glued to a prefix (PGPASSWORD, DBPASSWD).
GLUED_SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "apikey", "credentials")
# Two-word names: (first, second) adjacent in the key.
SECRET_PAIRS = frozenset(
    {("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"), ("signing", "key"),
     ("encryption", "key"), ("master", "key"), ("aes", "key"), ("account", "key"), ("shared", "key"),
     ("client", "secret"), ("auth", "token"), ("access", "token"), ("refresh", "token"), ("id", "token"),
     ("session", "token"), ("bearer", "token"), ("api", "token"), ("oauth", "token"), ("bot", "token"),
     ("webhook", "url"), ("webhook", "secret"), ("key", "id"), ("x", "api"), ("pat", "token"),
     ("security", "code"), ("verification", "code"), ("card", "code"), ("mfa", "code"), ("2fa", "code"),
     ("auth", "code"), ("recovery", "code"), ("recovery", "codes"), ("backup", "code"), ("backup", "codes")}
)  # fmt: skip
# Words that name a secret only when the value looks like one ({"token": "Hello"} in logprobs).
WEAK_SECRET_WORDS = frozenset(
    {"token", "key", "pass", "auth", "jwt", "pat", "webhook", "cookie", "sig", "signature"}
)
# "cache_key", "partition_key": keys of a table or a cache, not credentials.
KEY_QUALIFIERS_NOT_SECRET = frozenset(
    {"cache", "idempotency", "partition", "sort", "primary", "foreign", "object", "routing", "dedup", "lookup",
     "row", "s3", "bucket", "map", "dict", "sharding", "shard", "group", "join", "composite", "natural", "api"}
)  # fmt: skip
# A key ending in one of these describes a secret, it does not hold one.
META_WORDS = frozenset(
    {"count", "counts", "type", "types", "limit", "limits", "length", "len", "min", "max", "policy", "ttl",
     "expiry", "expires", "expiration", "at", "name", "names", "file", "path", "env", "enabled", "required",
     "set", "rotation", "rotate", "days", "version", "hint", "format", "algorithm", "alg", "scheme", "usage",
     "prefix", "last4", "hash", "strength", "reset", "ref", "arn", "manager", "store", "header", "mode", "stdin"}
)  # fmt: skip

KIND_WORDS: dict[str, frozenset[str]] = {
    "PHONE_NUMBER": frozenset({"phone", "tel", "telephone", "mobile", "cell", "fax", "msisdn", "whatsapp", "sms",
                               "callback", "contact", "telefon", "telefono", "handy", "telefone", "téléphone",
                               "teléfono", "tlf", "tfno", "movil", "móvil", "celular", "portable", "電話", "電話番号",
                               "携帯", "电话", "手机", "전화", "телефон"}),
    "CREDIT_CARD": frozenset({"card", "cc", "pan", "credit", "creditcard", "visa", "mastercard", "amex", "payment"}),
    "EMAIL_ADDRESS": frozenset({"email", "mail", "reply", "recipient", "sender", "correo", "courriel", "メール",
                                "邮箱", "이메일", "почта"}),
    "US_SSN": frozenset({"ssn", "social", "tax", "tin", "sin", "taxpayer"}),
    "IBAN_CODE": frozenset({"iban", "bank", "account", "payout"}),
    "IP_ADDRESS": frozenset({"ip", "addr", "remote", "client", "source"}),
    "NATIONAL_ID": frozenset({"cpf", "aadhaar", "aadhar", "pan", "nino", "nhs", "sin", "dni", "nie", "nif",
                              "codicefiscale", "fiscale", "nir", "insee", "steuerid", "steuer", "idnr", "bsn",
                              "pesel", "personnummer", "rrn", "mynumber", "マイナンバー", "個人番号", "身份证",
                              "身份证号", "身份证号码", "주민등록번호", "passport", "nationalid", "pnr", "cf",
                              "taxcode", "burgerservicenummer", "citizenservicenumber", "my_number",
                              "individualnumber", "kojin_bango", "kojinbango", "resident_registration_number",
                              "nhs_no", "aadhaar_no", "aadhaarno", "social_insurance_number", "sozialversicherungsnummer",
                              "svnr", "nss", "rut", "curp", "rfc"}),
    "PASSPORT_NUMBER": frozenset({"passport", "passeport", "reisepass", "reisepassnummer", "pasaporte",
                                  "passaporte", "passaporto", "paszport", "paspoort", "travel_document_number",
                                  "traveldocumentnumber", "travel_document", "reisepass_nr"}),
    "DATE_OF_BIRTH": frozenset({"dob", "birth", "birthdate", "birthday", "born", "geburtsdatum", "geburtstag",
                                "nascimento", "nacimiento", "naissance", "nascita", "geboortedatum", "生年月日", "urodzenia"}),
    "STREET_ADDRESS": frozenset({"address", "street", "adresse", "anschrift", "endereco", "endereço", "direccion",
                                 "dirección", "indirizzo", "adres", "住所", "strasse", "straße", "address1"}),
}  # fmt: skip
# ``<role>_name`` keys that name a person (``product_name``, ``table_name`` do not).
PERSON_ROLES = frozenset(
    {"customer", "contact", "patient", "employee", "user", "full", "first", "last", "given", "family", "display",
     "holder", "account", "sender", "recipient", "owner", "author", "person", "client", "member", "guest",
     "driver", "passenger", "buyer", "seller", "applicant", "beneficiary", "middle", "maiden", "legal", "nick"}
)  # fmt: skip
PERSON_KEYS = frozenset(
    {"name", "full_name", "first_name", "last_name", "given_name", "family_name", "surname", "customer_name",
     "contact_name", "assignee", "author", "owner", "patient", "patient_name", "employee", "employee_name",
     "recipient", "recipient_name", "sender", "sender_name", "display_name", "cardholder", "card_holder",
     "holder_name", "account_holder", "person", "signatory", "reporter", "requester", "contact", "fullname",
     "firstname", "lastname", "attendee", "guardian", "next_of_kin", "emergency_contact", "beneficiary", "payee",
     "passenger", "pax", "traveller", "traveler", "given_names", "vorname", "nachname", "prenom", "nom", "nome",
     "sobrenome", "apellidos", "nombre", "imie", "nazwisko"}
)  # fmt: skip


@lru_cache(maxsize=8192)
def key_words(key: str) -> tuple[str, ...]:
    """``db_url_password`` / ``dbUrlPassword`` / ``DB-URL-PASSWORD`` -> ("db", "url", "password")."""
    return tuple(w for w in _SPLIT.split(_CAMEL.sub("_", key).lower()) if w)


def normal_key(key: str) -> str:
    return "_".join(key_words(key))


@lru_cache(maxsize=8192)
def names_secret(key: str) -> str:
    """ "strong" when the key names a secret, "weak" when it might (the value must look like one), else ""."""
    words = key_words(key)
    if not words or words[-1] in META_WORDS or len(words) > 8:
        return ""
    joined = "".join(words)
    if any(w in SECRET_WORDS for w in words) or joined in SECRET_WORDS:
        return "strong"
    if words[-1].endswith(GLUED_SECRET_ENDINGS):  # glued to a prefix: PGPASSWORD -> "pgpassword"
        return "strong"
    if any(p in SECRET_PAIRS for p in zip(words, words[1:], strict=False)):
        return "strong"
    if words[-1] == "key" and len(words) > 1 and words[-2] in KEY_QUALIFIERS_NOT_SECRET - {"api"}:
        return ""
    if any(w in WEAK_SECRET_WORDS for w in words):
        return "weak"
    return ""


_CODE_OR_PLACEHOLDER = re.compile(
    r"^(?:(?=.*\s)(?=.*[(=]).*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\s*[(\[].*|[a-z_][A-Za-z_]*(?:\.[A-Za-z_](?:\w*[A-Za-z_])?\d?)+(?:\s.*)?|[A-Za-z_]\w*\s*\(.*|.*\b(?:os\.environ|getenv|process\.env)\b.*"
    r"|\$\{.*\}|\$[A-Z_][A-Z0-9_]*|%\(\w+\)s|%[A-Z_]+%|\{\{.*\}\}|<[^<>]*>|(?i:.*\b(?:your|my)[-_ ]?(?:api[-_ ]?)?(?:key|token|secret|password)[-_ ]?(?:here)?\b.*)"
    r"|(?i:x{4,}|\*{3,}|\.{3}|changeme|change[-_]me|placeholder|redacted|dummy|example|none|null|str|string|bytes|int))$"
)


def code_or_placeholder(value: str) -> bool:
    """``os.environ['API_KEY']``, ``settings.SECRET``, ``get_password()``, ``${DB_PASS}``, ``your-key-here``.
    A dotted name is code when called or indexed, or written as an attribute path (``settings.DB_PASSWORD``,
    ``config.db.password``: lower-case root, no digit run at a segment's end); ``Falcon.Sunset34`` and
    ``M4pl37.walrus`` are passwords."""
    return _CODE_OR_PLACEHOLDER.match(value.strip()) is not None


def names_a_secret(key: str) -> bool:
    """``clientSecret``, ``DB_PASSWORD``, ``x-api-key`` -> True; ``token_count``, ``max_tokens`` -> False."""
    return names_secret(key) == "strong"


def names_maybe_a_secret(key: str) -> bool:
    """``token``/``HF_TOKEN``/``key``: a secret only if the value looks like one."""
    return names_secret(key) == "weak"


NOT_SECRETS = frozenset({"", "null", "none", "true", "false", "undefined", "redacted", "***", "<redacted>"})


def looks_like_literal(value: str) -> bool:
    """A literal secret rather than code: has a digit or a symbol, and is not a template/placeholder."""
    if not value or value[0] in "$<{%" or value.lower() in NOT_SECRETS:
        return False
    return any(c.isdigit() for c in value) or any(not c.isalnum() and c not in "._" for c in value)


_PLAIN_URL = re.compile(r"(?i)^[a-z][a-z0-9+.\-]*://[^/?#@\s]+(?:/[^?#\s]*)?$")


def looks_like_token(value: str) -> bool:
    """One run of 8+ characters with a digit or a symbol, no blanks (``Hello`` is not a token); a URL with
    no credentials and no query (``https://oauth2.googleapis.com/token``) is an address, not a token."""
    return (
        len(value) >= 8
        and not any(c.isspace() for c in value)
        and looks_like_literal(value)
        and _PLAIN_URL.match(value) is None
    )


def pair_value_context(name: str, value: str) -> list[str] | None:
    """The context for ``value`` when it is the second of a ``[name, value]`` pair (a header list, a
    ``(key, default)`` argument pair), else None. A secret's name counts only before a value shaped like
    a token, so a list of field names (``["password", "email"]``) stays as it is."""
    if len(name) > 64:
        return None
    if names_secret(name):
        return [name] if looks_like_token(value) else None
    return [name] if names_kind(name) else None


@lru_cache(maxsize=8192)
def names_kind(key: str) -> frozenset[str]:
    """PII kinds a key names (``contact_phone`` -> PHONE_NUMBER; ``customer_name`` -> PERSON)."""
    words = key_words(key)
    if not words or words[-1] in META_WORDS - {"name"}:
        return frozenset()
    whole = {"_".join(words), "".join(words)}  # "my_number", "citizenservicenumber"
    found = {
        kind
        for kind, vocab in KIND_WORDS.items()
        if kind != "PERSON" and not (vocab.isdisjoint(words) and vocab.isdisjoint(whole))
    }
    if normal_key(key) in PERSON_KEYS or (
        words[-1] == "name" and len(words) <= 3 and words[0] in PERSON_ROLES
    ):
        found.add("PERSON")
    return frozenset(found)


def names_anything(key: str) -> bool:
    return bool(names_secret(key)) or bool(names_kind(key))


class KeyedSpan(NamedTuple):
    key: str
    start: int
    end: int


_KEY = r"\.?[^\W\d][\w.\-]{0,63}"  # a letter or "_" first (after a dot: ".dockerconfigjson"), any script
_LINE_ASSIGN = re.compile(
    r"^[ \t]*(?:export[ \t]+|set[ \t]+)?[\"']?(?P<k>" + _KEY + r")[\"']?[ \t]*(?::|=|:=|=>)[ \t]*"
    r"(?P<q>[\"'`]?)(?P<v>[^\r\n]*?)(?P=q)[ \t]*,?[ \t]*$",
    re.MULTILINE,
)
# quotes may be escaped: a JSON document logged inside a string (body="{\"password\": \"…\"}")
_INLINE_QUOTED = re.compile(
    r"(?:(?<=[?&;\s(,{\[\\])|^)\\?[\"']?(?P<k>" + _KEY + r")\\?[\"']?[ \t]*(?:=|:)[ \t]*"
    r"\\?(?P<q>[\"'])(?P<v>(?:[^\"'\r\n\\]|\\(?![\"'])){1,512})\\?(?P=q)"
)
# after ":" too: an .npmrc line's "//registry.npmjs.org/:_authToken=…"
_INLINE_BARE = re.compile(r"(?:(?<=[?&;:\s(,{\[])|^)(?P<k>" + _KEY + r")=(?P<v>[^\s&\"',;)}\]]{1,512})")
_HEADER_ARG = re.compile(
    r"(?P<q>[\"'])(?P<k>[A-Za-z][A-Za-z0-9\-]{1,40}):[ \t]*(?P<v>[^\"'\r\n]{1,512})(?P=q)"
)
_XML_ELEMENT = re.compile(r"<(?P<k>" + _KEY + r")(?:[ \t][^<>\n]*)?>(?P<v>[^<>\r\n]{1,512})</(?P=k)>")
_MD_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$")
_CSV_HEAD = re.compile(r"^[ \t]*[^\W\d][\w .\-]*(?:[,;\t][ \t]*[^\W\d][\w .\-]*){1,30}[ \t]*$")


# What a line must hold for each pair shape to match in it (none of them matches across a line break):
# bit 1 "=", bit 2 ":", bit 4 a quote; a shape is tried on the lines holding all the bits of one entry.
_EQ, _COLON, _QUOTE = 1, 2, 4
_PAIR_SHAPES: tuple[tuple[re.Pattern[str], frozenset[int]], ...] = tuple(
    (rx, frozenset(bits for bits in range(8) if any(bits & w == w for w in wanted)))
    for rx, wanted in (
        (_LINE_ASSIGN, (_EQ, _COLON)),
        (_INLINE_QUOTED, (_EQ | _QUOTE, _COLON | _QUOTE)),
        (_INLINE_BARE, (_EQ,)),
        (_HEADER_ARG, (_COLON | _QUOTE,)),
    )
)


def _line_marks(text: str) -> list[tuple[int, int, int]]:
    """(start, end, bits) of each line of ``text`` holding "=" or ":", in order."""
    out: list[tuple[int, int, int]] = []
    pos = 0
    for line in text.split("\n"):
        end = pos + len(line)
        bits = ("=" in line) | (":" in line) << 1
        if bits:
            out.append((pos, end, bits | ('"' in line or "'" in line) << 2))
        pos = end + 1
    return out


def _matches_in_lines(
    rx: re.Pattern[str], text: str, lines: list[tuple[int, int, int]], allowed: frozenset[int]
) -> Iterator[re.Match[str]]:
    """``rx.finditer(text)`` run only over the lines that can hold a match (runs of such lines scanned
    at once): a match never spans a line break, and a scan bounded to lines sees the real text around
    them (``^``, look-behinds), so the matches and their order are those of the whole-text scan, at a
    fraction of its cost on code and logs."""
    block_start = block_end = -1
    for start, end, bits in lines:
        if bits not in allowed:
            continue
        if start == block_end + 1:
            block_end = end
            continue
        if block_end >= 0:
            yield from rx.finditer(text, block_start, block_end)
        block_start, block_end = start, end
    if block_end >= 0:
        yield from rx.finditer(text, block_start, block_end)


def keyed_spans(text: str) -> list[KeyedSpan]:
    """``key = value`` pairs in text whose key names a secret or a PII kind, as value spans."""
    if not any(c in text for c in ("=", ":", ",", ";", "\t", "|", "</")):
        return []
    spans: dict[tuple[int, int], str] = {}
    lines = _line_marks(text)
    for rx, allowed in _PAIR_SHAPES:
        for m in _matches_in_lines(rx, text, lines, allowed):
            key = m.group("k")
            start, end = m.span("v")
            if end > start and names_anything(key) and not code_or_placeholder(m.group("v")):
                spans.setdefault((start, end), key)
    if "</" in text:  # <password>…</password>, <phone type="work">…</phone>
        for m in _XML_ELEMENT.finditer(text):
            if names_anything(m["k"]) and not code_or_placeholder(m["v"]):
                spans.setdefault(m.span("v"), m["k"])
    cells = csv_cells(text) + (table_cells(text) if "|" in text else [])
    cells += [KeyedSpan(k, s, e) for k, s, e in sql_cells(text) if names_anything(k)]
    spans.update({(s, e): k for k, s, e in cells if (s, e) not in spans})
    return [KeyedSpan(k, s, e) for (s, e), k in sorted(spans.items())]


def csv_cells(text: str) -> list[KeyedSpan]:
    """Cells of a CSV/TSV block under a header row, for the columns whose header names something."""
    lines = text.split("\n")
    out: list[KeyedSpan] = []
    offset = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if _CSV_HEAD.match(line) and i + 1 < len(lines):
            delim = max(",;\t", key=line.count)
            header = [h.strip() for h in line.split(delim)]
            wanted = {j: h for j, h in enumerate(header) if names_anything(h)}
            pos = offset + len(line) + 1
            j = i + 1
            while wanted and j < len(lines) and lines[j].count(delim) >= len(header) - 1 and lines[j].strip():
                out.extend(_row_cells(lines[j], pos, delim, wanted))
                pos += len(lines[j]) + 1
                j += 1
            if j > i + 1:
                offset = pos
                i = j
                continue
        offset += len(line) + 1
        i += 1
    return out


def table_cells(text: str) -> list[KeyedSpan]:
    """Cells of a Markdown table (a header row, a ``|---|`` rule, then rows), for the columns whose header
    names something."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    out: list[KeyedSpan] = []
    i = 0
    while i + 1 < len(lines):
        if "|" not in lines[i] or not _MD_RULE.match(lines[i + 1]) or "|" not in lines[i + 1]:
            i += 1
            continue
        wanted = {j: h for j, (h, _, _) in enumerate(_pipe_cells(lines[i])) if names_anything(h)}
        j = i + 2
        while j < len(lines) and "|" in lines[j]:
            for col, (cell, s, e) in enumerate(_pipe_cells(lines[j])):
                if col in wanted and cell:
                    out.append(KeyedSpan(wanted[col], starts[j] + s, starts[j] + e))
            j += 1
        i = j
    return out


def _pipe_cells(row: str) -> list[tuple[str, int, int]]:
    """(stripped text, start, end) of each cell of a ``| a | b |`` row (outer pipes optional)."""
    bounds = [k for k, c in enumerate(row) if c == "|" and (k == 0 or row[k - 1] != "\\")]
    if not bounds:
        return []
    if row[: bounds[0]].strip():
        bounds.insert(0, -1)
    if row[bounds[-1] + 1 :].strip():
        bounds.append(len(row))
    cells = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        raw = row[a + 1 : b]
        lead = len(raw) - len(raw.lstrip())
        text = raw.strip()
        cells.append((text, a + 1 + lead, a + 1 + lead + len(text)))
    return cells


def _row_cells(row: str, base: int, delim: str, wanted: dict[int, str]) -> list[KeyedSpan]:
    cells = next(csv.reader(io.StringIO(row), delimiter=delim), [])
    out: list[KeyedSpan] = []
    cursor = 0
    for j, cell in enumerate(cells):
        at = row.find(cell, cursor) if cell else -1
        if at < 0:
            continue
        cursor = at + len(cell)
        if j in wanted and cell.strip():
            out.append(KeyedSpan(wanted[j], base + at, base + at + len(cell)))
    return out
