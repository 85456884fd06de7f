"""Key-shaped tokens: vendor formats by their documented prefixes, and any high-entropy token in a secret context.

Two classes of credential that have no recognizer of their own:

- documented vendor formats: Hugging Face ``hf_``, GitLab ``glpat-``, npm ``npm_``, PyPI ``pypi-AgEI``,
  SendGrid ``SG.<22>.<43>``, Twilio API keys ``SK`` + 32 hex, Mailgun ``key-`` + 32 hex, Shopify
  ``shpat_``/``shpss_``, Databricks ``dapi``, DigitalOcean ``dop_v1_``, Atlassian ``ATATT``, Telegram bot
  tokens ``<bot id>:AA`` + 33, Discord webhook ``…/webhooks/<id>/<token>`` (id and token), HashiCorp
  Vault ``hvs.``/``hvb.``/``hvr.``, Doppler ``dp.st.``, Supabase ``sbp_``, Linear ``lin_api_``, Postman
  ``PMAK-``, Grafana ``glsa_``/``glc_``, Sentry ``sntrys_``, New Relic ``NRAK-``, Replicate ``r8_``, Groq
  ``gsk_``, Perplexity ``pplx-``, xAI ``xai-``, Figma ``figd_``, PlanetScale ``pscale_tkn_``, Pulumi
  ``pul-``, Terraform Cloud ``.atlasv1.``, age ``AGE-SECRET-KEY-1``, Slack ``xapp-``: a vendor format
  counts whatever its letters (a Hugging Face token may hold no digit);
- a key-shaped token (20+ characters of letters and digits, high entropy; not a UUID, version or path)
  after ``Bearer``/``Basic``/``token``, or shortly after a secret word in several languages (``key``,
  ``token``, ``secret``, ``Schlüssel``, ``clé``, ``clave``): ``here's the token: …``.

Git SHAs, ``sha256:`` digests and UUIDs in ordinary text are not in a secret context and are left alone.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import re2
from presidio_analyzer import Pattern

from governance.redaction.recognizers.base import SluicePatternRecognizer, any_of, lowered

_SECRET_CONTEXT = (
    r"(?<![A-Za-z])(?i:key|keys|token|secret|password|passwd|credentials?|bearer|api[ _-]?key|apikey|auth[ _-]?token|"
    r"schlüssel|clé|clave|chiave|senha|passwort|jeton|contraseña|rotate)(?![A-Za-z])"
)
_KEY_SHAPED = r"(?<!sha1:)(?<!sha256:)(?<!sha512:)(?<!md5:)(?P<v>[A-Za-z0-9][A-Za-z0-9_\-+/=.~]{19,511})"
_END = r"(?![A-Za-z0-9_\-+/=~])"
_VENDOR = (
    r"hf_[A-Za-z0-9]{30,40}|glpat-[A-Za-z0-9_\-]{20,40}|npm_[A-Za-z0-9]{36}|pypi-AgEI[A-Za-z0-9_\-]{40,}"
    r"|SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}|SK[0-9a-f]{32}|key-[0-9a-f]{32}|shp(?:at|ss|ca|pa)_[0-9a-fA-F]{32}"
    r"|dapi[0-9a-f]{32}|dop_v1_[0-9a-f]{64}|ATATT[A-Za-z0-9_\-=]{40,}"
    r"|(?<=[0-9]:)AA[A-Za-z0-9_\-]{33}|(?<=webhooks/)[0-9]{17,20}/[A-Za-z0-9_\-]{60,80}"
    # HashiCorp Vault service/batch/recovery tokens, Doppler, Supabase, Linear, Postman, Grafana service
    # accounts and cloud, Sentry, New Relic, Replicate, Groq, Perplexity, xAI, Figma, PlanetScale, Pulumi,
    # Terraform Cloud, age secret keys, Slack app-level tokens
    r"|hv[sbr]\.[A-Za-z0-9_\-]{24,}|dp\.(?:st|ct|sa|scim)\.[A-Za-z0-9_\-.]{30,}|sbp_[0-9a-f]{40}"
    r"|lin_api_[A-Za-z0-9]{40}|PMAK-[0-9a-f]{24}-[0-9a-f]{34}|glsa_[A-Za-z0-9_]{32,}|glc_[A-Za-z0-9+/=]{32,}"
    r"|sntry[su]_[A-Za-z0-9+/=_\-]{40,}|NRAK-[A-Z0-9]{27}|r8_[A-Za-z0-9]{37}|gsk_[A-Za-z0-9]{48,52}"
    r"|pplx-[A-Za-z0-9]{40,56}|xai-[A-Za-z0-9]{60,90}|figd_[A-Za-z0-9_\-]{40,}|pscale_(?:tkn|pw)_[A-Za-z0-9_\-.]{32,}"
    r"|pul-[0-9a-f]{40}|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,}|AGE-SECRET-KEY-1[0-9A-Z]{58}"
    r"|xapp-\d-[A-Z0-9]+-\d+-[0-9a-f]{40,}"
)
_VENDOR_TOKEN = re.compile(_VENDOR)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_VERSIONISH = re.compile(
    r"\d+\.\d+\.|\.(?:py|js|ts|go|rs|json|ya?ml|txt|md|html?|csv|log|sh|cfg|ini|toml|git)$"
)


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def key_shaped(value: str) -> bool:
    """A machine-made token: a documented vendor format (whatever its letters), or 20+ characters of letters
    and digits with high entropy that are not a UUID, version or path."""
    if _VENDOR_TOKEN.fullmatch(value) is not None:
        return True
    if (
        len(value) < 20
        or "://" in value
        or value[0] in "/."
        or _UUID.search(value)
        or _VERSIONISH.search(value)
    ):
        return False
    if not any(c.isdigit() for c in value) or not any(c.isalpha() for c in value):
        return False
    return entropy(value) >= 3.5


# The start of each run of 20+ characters a key-shaped value is written with (each run found once).
_TOKEN_RUN = re.compile(r"(?<![A-Za-z0-9_\-+/=.~])[A-Za-z0-9_\-+/=.~]{20}")
# Whether there is any such run at all: one RE2 pass (a DFA in C++) where Python's ``re`` tries the class at
# every position; every value of every pattern (vendor formats included) is such a run.
_ANY_TOKEN_RUN = re2.compile(r"[A-Za-z0-9_\-+/=.~]{20}")
# What a line must hold for each pattern below: a vendor prefix as written; the lower-cased letters of
# one of the pattern's words (``api key``, ``auth token``, ``passwd`` hold ``key``, ``token``, ``passw``).
_VENDOR_PREFIXES = (
    "hf_",
    "glpat-",
    "npm_",
    "pypi-AgEI",
    "SG.",
    "SK",
    "key-",
    "shp",
    "dapi",
    "dop_v1_",
    "ATATT",
    ":AA",
    "webhooks/",
    "hvs.",
    "hvb.",
    "hvr.",
    "dp.",
    "sbp_",
    "lin_api_",
    "PMAK-",
    "glsa_",
    "glc_",
    "sntry",
    "NRAK-",
    "r8_",
    "gsk_",
    "pplx-",
    "xai-",
    "figd_",
    "pscale_",
    "pul-",
    ".atlasv1.",
    "AGE-SECRET-KEY-1",
    "xapp-",
)
_PATTERN_NEEDS = (
    _VENDOR_PREFIXES,
    ("bearer", "basic", "token"),
    ("key", "token", "secret", "passw", "credential", "bearer", "rotate", "clave", "chiave", "senha", "jeton"),
)  # fmt: skip
# each of those tests as one alternation of literals (a search in C, not a substring test per word)
_NEEDS_FOUND = tuple(re.compile("|".join(re.escape(w) for w in needs)) for needs in _PATTERN_NEEDS)


class ApiTokenRecognizer(SluicePatternRecognizer):
    ENTITY = "API_TOKEN"
    PATTERNS = [
        Pattern("documented vendor token", r"(?<![A-Za-z0-9_\-])(?P<v>" + _VENDOR + r")" + _END, 0.95),
        Pattern(
            "bearer, basic or token credential",
            r"(?i:\b(?:bearer|basic|token))[ \t]+" + _KEY_SHAPED + _END,
            0.9,
        ),
        Pattern(
            "key-shaped token after a secret word",
            _SECRET_CONTEXT + r"[^\n]{0,40}?(?<![A-Za-z0-9_\-+/=.~])" + _KEY_SHAPED + _END,
            0.9,
        ),  # fmt: skip
    ]
    LOWER_TRIGGERS = ("key", "token", "secret", "pass", "credential", "bearer", "basic", "api", "auth", "clé",
                      "clave", "chiave", "senha", "schlüssel", "jeton", "contraseña", "rotate", "hf_", "glpat-",
                      "npm_", "pypi-", "sg.", "sk", "dapi", "dop_v1", "atatt", "shp", ":aa", "webhooks/", "hvs.",
                      "hvb.", "hvr.", "dp.", "sbp_", "lin_api_", "pmak-", "glsa_", "glc_", "sntry", "nrak-", "r8_",
                      "gsk_", "pplx-", "xai-", "figd_", "pscale_", "pul-", ".atlasv1.", "age-secret-key-1",
                      "xapp-")  # fmt: skip
    # the words only: a counted run of token characters in the set doubles the cost of the whole scan
    TRIGGER_PATTERNS = (any_of(LOWER_TRIGGERS, caseless=True),)
    _trigger_words = re2.compile(any_of(LOWER_TRIGGERS))

    def may_match(self, text: str, context: list[str] | None = None) -> bool:
        """Whether a pattern finds a key-shaped value. Every match lies within one line and its value is a
        run of 20+ token characters, so the patterns run only on the lines holding such a run, and each
        only where its words can occur: a vendor prefix (as written), or on ASCII lines a secret word
        (any case; a line with other letters keeps every pattern, as case folding there is wider)."""
        if len(text) < 20:
            return False
        try:  # most texts hold no run of 20 token characters: nothing for any pattern to report
            if _ANY_TOKEN_RUN.search(text) is None:
                return False
        except UnicodeEncodeError:  # a lone surrogate: the runs are looked for below
            pass
        low = lowered(text)
        try:  # one RE2 pass, not a substring search per word
            if self._trigger_words.search(low) is None:
                return False
        except UnicodeEncodeError:  # a lone surrogate: RE2 reads UTF-8 only
            if not any(t in low for t in self.LOWER_TRIGGERS):
                return False
        done = -1
        for run in _TOKEN_RUN.finditer(text):
            start = text.rfind("\n", 0, run.start()) + 1
            if start == done:
                continue
            done = start
            end = text.find("\n", run.end())
            end = len(text) if end < 0 else end
            line = text[start:end]
            words = line.lower() if line.isascii() else None
            for (_, rx), needs, found in zip(self._compiled, _PATTERN_NEEDS, _NEEDS_FOUND, strict=True):
                if needs is _VENDOR_PREFIXES:
                    if found.search(line) is None:
                        continue
                elif words is not None and found.search(words) is None:
                    continue
                if any(key_shaped(text[m.start("v") : m.end("v")]) for m in rx.finditer(text, start, end)):
                    return True
        return False

    def validate_result(self, pattern_text: str) -> bool:
        return key_shaped(pattern_text)
