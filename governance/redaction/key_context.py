"""What a key says about its value: the vocabulary that turns a field name into a redaction context.

A value's own key (``{"db_password": …}``, ``DB_PASSWORD=…``, a CSV column header) or a sibling that
names it (``{"field": "db_url_password", "value": …}``) tells more than the value's shape. This module
holds the one vocabulary for that: ``key_words`` splits any key style (``snake_case``, ``camelCase``,
``kebab-case``, ``SCREAMING_CASE``) into words, ``names_secret`` / ``names_kind`` classify them.
``governance.redaction.keyed_spans`` finds the ``key = value`` pairs written in text and asks this
vocabulary whether their keys name anything.

Keys whose last word says the value is *about* a secret rather than the secret (``token_count``,
``password_policy``, ``secret_name``, ``max_tokens``) name nothing.
"""

from __future__ import annotations

import re
from functools import lru_cache

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


def key_stems() -> frozenset[str]:
    """Letter strings one of which every key that ``names_anything`` holds once its separators are taken out
    (``DB_PASSWORD`` -> ``dbpassword`` holds ``password``, ``mot_de_passe`` holds ``motdepasse``): each word
    of the vocabulary, each joined name, each two-word secret name joined, each glued ending. A text none
    of them occurs in (separators allowed between letters) has no key that names anything."""
    stems = {*SECRET_WORDS, *GLUED_SECRET_ENDINGS, *WEAK_SECRET_WORDS, "name"}
    stems.update(a + b for a, b in SECRET_PAIRS)
    for vocab in KIND_WORDS.values():
        stems.update(vocab)
    stems.update(PERSON_KEYS)
    return frozenset(s.replace("_", "") for s in stems)
