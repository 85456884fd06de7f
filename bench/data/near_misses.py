"""Clean agent text full of near-misses: things shaped like identifiers that are not PII or secrets.

Order numbers, versions (including four-part ``v1.2.3.4``), timestamps (ISO, epoch seconds and
milliseconds), git SHAs and content hashes, UUIDs, ports, prices, Luhn-failing 16-digit tracking
numbers, IBAN-shaped codes with wrong check digits, ``scikit-learn``/``sk-`` slugs, PEM *public* keys
and certificates, URLs without passwords, code that names passwords without containing one
(``password: str``, ``api_key=os.environ[...]``), ``git@github.com:org/repo.git`` remotes. Any finding
on these texts is a false positive.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid

from bench.data.identifiers import iban_check_digits


def _luhn_invalid_16(rng: random.Random) -> str:
    while True:
        digits = str(rng.choice([4, 5])) + "".join(rng.choice(string.digits) for _ in range(15))
        total = sum(
            (d * 2 - 9 if d * 2 > 9 else d * 2) if i % 2 else d
            for i, d in enumerate(map(int, reversed(digits)))
        )
        if total % 10:
            return digits


def _bad_iban(rng: random.Random) -> str:
    bban = "".join(rng.choice(string.digits) for _ in range(18))
    good = iban_check_digits("DE", bban)
    bad = f"{(int(good) + rng.randint(1, 50)) % 97 + 2:02d}"
    return "DE" + (bad if bad != good else "01") + bban


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _sha(rng: random.Random) -> str:
    return _hex(rng, 40)


def _slots(rng: random.Random) -> dict[str, str]:
    epoch = rng.randint(1_600_000_000, 1_800_000_000)
    return {
        "order": f"ORD-{rng.randint(2019, 2026)}-{rng.randint(0, 999999):06d}",
        "order_num": str(rng.randint(10_000_000, 99_999_999)),
        "ticket": f"{rng.choice(['JIRA', 'OPS', 'SEC', 'PLAT'])}-{rng.randint(1, 99999)}",
        "semver": f"{rng.randint(0, 20)}.{rng.randint(0, 40)}.{rng.randint(0, 99)}",
        "ver4": f"v{rng.randint(1, 12)}.{rng.randint(0, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 200)}",
        "winbuild": f"10.0.{rng.randint(17000, 26000)}.{rng.randint(1000, 5000)}",
        "iso": f"{rng.randint(2019, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
        f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z",
        "date": f"{rng.randint(1, 12):02d}/{rng.randint(1, 28):02d}/{rng.randint(2019, 2026)}",
        "epoch": str(epoch),
        "epoch_ms": str(epoch * 1000 + rng.randint(0, 999)),
        "sha": _sha(rng),
        "short_sha": _hex(rng, 7),
        "sha256": hashlib.sha256(rng.randbytes(16)).hexdigest(),
        "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "port": str(rng.choice([5432, 6379, 8080, 8443, 9092, 27017, 3000])),
        "price": f"${rng.randint(1, 9)},{rng.randint(100, 999)}.{rng.randint(0, 99):02d}",
        "tracking": _luhn_invalid_16(rng),
        "bad_iban": _bad_iban(rng),
        "line": str(rng.randint(1, 4000)),
        "pid": str(rng.randint(1000, 99999)),
        "ms": f"{rng.randint(1, 9999)}.{rng.randint(0, 99)}",
        "rows": f"{rng.randint(1, 999)},{rng.randint(100, 999)},{rng.randint(100, 999)}",
        "b64": base64.b64encode(rng.randbytes(12)).decode(),
        "color": "#" + _hex(rng, 6),
        "res": rng.choice(["1920x1080", "2560x1440", "3840x2160"]),
        "zip4": f"{rng.randint(10000, 99999)}-{rng.randint(1000, 9999)}",
        "coord": f"{rng.uniform(-80, 80):.4f}, {rng.uniform(-170, 170):.4f}",
        "isbn": f"978-{rng.randint(0, 9)}-{rng.randint(100, 999)}-{rng.randint(10000, 99999)}-{rng.randint(0, 9)}",
    }


CLEAN_PROSE = [
    "I looked up order {order} and it shipped on {iso}; tracking number {tracking}.",
    "Upgraded the package to {semver} and pinned numpy==1.{line}.0; tests pass on Python 3.11.7.",
    "The agent binary reports {ver4} (build {winbuild}); the previous release was v{semver}.",
    "Commit {sha} fixed the race; see also {short_sha} and the ticket {ticket}.",
    "Artifact digest sha256:{sha256} matches the one in the release notes.",
    "Request {uuid} took {ms} ms and scanned {rows} rows.",
    "Postgres is listening on localhost:{port}; the worker pid is {pid}.",
    "The invoice total is {price}, due {date}, reference {order_num}.",
    "Line {line} of src/parser.py raises KeyError when the batch id is {order_num}.",
    "Timestamp {epoch} corresponds to {iso}; the ms value was {epoch_ms}.",
    "Set the theme color to {color} and the viewport to {res}.",
    "Shipping to ZIP {zip4}; warehouse at coordinates {coord}.",
    "The book ISBN is {isbn}; the import code {bad_iban} was rejected by the bank validator.",
    "Install scikit-learn and sk-learn-contrib, then run task-manager-sk-ui on port {port}.",
    "def login(username: str, password: str) -> Token: ...  # api_key=os.environ['OPENAI_API_KEY']",
    "Clone with git clone git@github.com:acme/widgets.git and check out {short_sha}.",
    "Connect to postgres://db.internal:{port}/app or https://api.example.com:8443/v1/models?limit={line}.",
    "The public key is -----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    "Put your key in OPENAI_API_KEY (it starts with sk-) and set max_tokens to 1024; token_count was {pid}.",
    'The cache key is {b64} and the etag is W/"{short_sha}"; retry after {ms} seconds.',
    "npm i @types/node@20.11.5 lodash@4.17.21 and bump the lockfile to {semver}.",
    "Use the placeholder sk-... or export STRIPE_KEY=your-key-here; never commit password123 style secrets.",
    "Job {ticket} ran {epoch_ms} ms after epoch; exit code 0 for {rows} records.",
    "The Kubernetes pod api-{short_sha}-{pid} restarted 3 times; node ip-10-0-{line}-internal.",
]


def clean_payload(rng: random.Random) -> dict:
    """A clean tool result or tool-call argument object."""
    s = _slots(rng)
    choice = rng.randrange(6)
    if choice == 5:
        toks = [
            {"token": w, "logprob": round(-rng.random(), 3)} for w in ("Hello", " world", "!", " token_2")
        ]
        return {"model": "sluice-tiny", "logprobs": {"content": toks}, "secret": None, "pass": True}
    if choice == 0:
        return {"order_id": s["order"], "status": "shipped", "tracking": s["tracking"], "updated_at": s["iso"],
                "items": [{"sku": s["ticket"], "qty": rng.randint(1, 5), "price": s["price"]}]}  # fmt: skip
    if choice == 1:
        return {"commit": s["sha"], "version": s["semver"], "build": s["winbuild"], "digest": "sha256:" + s["sha256"],
                "created": int(s["epoch"]), "duration_ms": float(s["ms"])}  # fmt: skip
    if choice == 2:
        return {"request_id": s["uuid"], "max_tokens": 1024, "token_count": int(s["pid"]), "temperature": 0.2,
                "model": "gpt-4o-2024-08-06", "usage": {"prompt_tokens": int(s["line"]), "total": int(s["order_num"])}}  # fmt: skip
    if choice == 3:
        return {"path": f"src/app/v{rng.randint(1, 3)}/routes_{s['line']}.py", "line": int(s["line"]),
                "match": "password: str = Field(..., min_length=8)", "repo": "git@github.com:acme/widgets.git"}  # fmt: skip
    return {"timestamp": s["iso"], "epoch_ms": int(s["epoch_ms"]), "host": "localhost", "port": int(s["port"]),
            "color": s["color"], "resolution": s["res"], "zip": s["zip4"], "cache_key": s["b64"]}  # fmt: skip


def clean_texts(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(CLEAN_PROSE).format(**_slots(rng)) for _ in range(n)]


def clean_payloads(rng: random.Random, n: int) -> list[str]:
    return [json.dumps(clean_payload(rng)) for _ in range(n)]
