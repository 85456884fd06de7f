"""The labelled redaction evaluation set: prose and JSON tool payloads, positives and clean near-misses.

Deterministic: ``build_eval_set(seed)`` always returns the same cases. Prose cases carry character
spans; JSON cases are tool payloads (serialised) whose labels name the leaf (JSON pointer) and the
span inside that leaf's text, since a payload is analysed value by value with its key as context.

    python -m bench.data.redaction_eval_set --summary
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from typing import Literal

from pydantic import BaseModel, Field

from bench.data import identifiers as ids
from bench.data.near_misses import clean_payloads, clean_texts


class GoldSpan(BaseModel):
    entity: str
    variant: str
    start: int
    end: int
    path: str = Field("", description="JSON pointer of the leaf (JSON cases); '' for prose.")


class EvalCase(BaseModel):
    case_id: str
    kind: Literal["prose", "json"]
    clean: bool
    text: str
    spans: list[GoldSpan] = Field(default_factory=list)


PROSE = {
    "EMAIL_ADDRESS": ["Please forward the signed contract to {v} before Friday.",
                      "From: {v}\nSubject: Re: quarterly numbers", "ERROR 2024-03-15 smtp: 550 mailbox {v} unavailable",
                      "The customer ({v}) asked for a refund of order ORD-2291.",
                      "Reply-To: Support Team <{v}>", "[mail me](mailto:{v}) or ping me on Slack.",
                      "Contact: {v}."],
    "PHONE_NUMBER": ["You can reach me on {v} after 5pm.", "Customer callback number: {v}",
                     "name,phone,city\nA. Chen,{v},Berlin", "Support line {v} is open 24/7.",
                     "Her mobile is {v} and the office fax is not in service.", "<a href=\"tel:{v}\">call us</a>",
                     "Call {v}.", "| Jane D. | {v} | Berlin |"],
    "CREDIT_CARD": ["Charge the card {v} exp 09/27 for the annual plan.", "payment_method=card number={v} status=declined",
                    "The customer read out {v} over the phone; please void it."],
    "IBAN_CODE": ["Wire the deposit to IBAN {v} (Sparkasse).", "Beneficiary account: {v}\nReference: INV-5523",
                  "Update the supplier's bank details to {v} please."],
    "IP_ADDRESS": ["Failed SSH login from {v} at 03:12 UTC.", "GET /api/v1/users 200 client={v} latency=12ms",
                   "Whitelist {v} in the security group.", "upstream connect error to [{v}]:443 reset",
                   "X-Forwarded-For: {v}", "ssh deploy@{v} -p 2222"],
    "US_SSN": ["Applicant SSN: {v}, filed 2024-07-19.", "Her social security number is {v}.",
               "ssn={v} state=CA status=verified"],
    "OPENAI_API_KEY": ["export OPENAI_API_KEY={v}", "Here is my key {v}, why do I get 401?", "headers = {{'Authorization': 'Bearer {v}'}}",
                       "client = OpenAI(api_key=\"{v}\")"],
    "ANTHROPIC_API_KEY": ["ANTHROPIC_API_KEY={v} python agent.py", "curl -H 'x-api-key: {v}' https://api.anthropic.com"],
    "AWS_ACCESS_KEY_ID": ["aws_access_key_id = {v}", "The leaked key {v} was rotated yesterday."],
    "AWS_SECRET_ACCESS_KEY": ["aws_secret_access_key = {v}", "AWS_SECRET_ACCESS_KEY={v}",
                              "[default]\nregion = eu-west-1\naws_secret_access_key={v}"],
    "GITHUB_TOKEN": ["git remote set-url origin https://{v}@github.com/acme/app.git", "GITHUB_TOKEN={v}",
                     "Use the token {v} for the CI job."],
    "SLACK_TOKEN": ["SLACK_BOT_TOKEN={v}", "Posting with token {v} failed: channel_not_found"],
    "STRIPE_KEY": ["stripe.api_key = \"{v}\"", "Live key {v} must be rotated."],
    "GOOGLE_API_KEY": ["https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={v}", "GOOGLE_API_KEY={v}"],
    "JWT": ["Authorization: Bearer {v}", "The session cookie is token={v}; expires in 1h."],
    "PRIVATE_KEY": ["Here is the deploy key:\n{v}\nAdd it to ~/.ssh.", "cat id_rsa\n{v}"],
}  # fmt: skip

JSON_KEYS = {
    "EMAIL_ADDRESS": ["email", "contact", "reply_to", "owner"],
    "PHONE_NUMBER": ["phone", "mobile", "contact_number", "tel"],
    "CREDIT_CARD": ["card_number", "pan", "card"],
    "IBAN_CODE": ["iban", "account", "bank_account"],
    "IP_ADDRESS": ["ip", "client_ip", "remote_addr", "host"],
    "US_SSN": ["ssn", "social_security_number", "tax_id"],
    "OPENAI_API_KEY": ["openai_api_key", "key", "value"],
    "ANTHROPIC_API_KEY": ["anthropic_api_key", "key", "value"],
    "AWS_ACCESS_KEY_ID": ["aws_access_key_id", "AccessKeyId"],
    "AWS_SECRET_ACCESS_KEY": ["aws_secret_access_key", "SecretAccessKey"],
    "GITHUB_TOKEN": ["github_token", "token", "value"],
    "SLACK_TOKEN": ["slack_token", "bot_token", "value"],
    "STRIPE_KEY": ["stripe_key", "secret", "value"],
    "GOOGLE_API_KEY": ["google_api_key", "key", "value"],
    "JWT": ["jwt", "id_token", "session"],
    "PRIVATE_KEY": ["private_key", "pem", "content"],
}


def _prose_case(rng: random.Random, entity: str, i: int) -> EvalCase:
    value, variant = rng.choice(ids.GENERATORS[entity])(rng)
    if entity == "US_SSN" and rng.random() < 0.2:
        value = value.replace("-", "").replace(" ", "")
        template = rng.choice(["SSN: {v}", "social security number {v} on file"])  # bare digits, named
        return _unlabelled_or_labelled(entity, "ssn_bare", template, value, i, label=True)
    template = rng.choice(PROSE[entity])
    return _unlabelled_or_labelled(entity, variant, template, value, i, label=True)


def _unlabelled_or_labelled(
    entity: str, variant: str, template: str, value: str, i: int, label: bool
) -> EvalCase:
    start = template.index("{v}")
    text = template.replace("{v}", value)
    spans = [GoldSpan(entity=entity, variant=variant, start=start, end=start + len(value))] if label else []
    return EvalCase(case_id=f"prose-{entity}-{i}", kind="prose", clean=not label, text=text, spans=spans)


def _url_password_case(rng: random.Random, i: int) -> EvalCase:
    url, pw, variant = ids.url_password(rng)
    text = rng.choice(
        ["DATABASE_URL={v}", "connecting to {v} ... ok", "Set the broker URL to {v} in settings."]
    )
    text = text.replace("{v}", url)
    start = text.index(":" + pw + "@") + 1
    return EvalCase(case_id=f"prose-URL_PASSWORD-{i}", kind="prose", clean=False, text=text,
                    spans=[GoldSpan(entity="URL_PASSWORD", variant=variant, start=start, end=start + len(pw))])  # fmt: skip


def _json_case(rng: random.Random, entity: str, i: int) -> EvalCase:
    value, variant = rng.choice(ids.GENERATORS[entity])(rng)
    key = rng.choice(JSON_KEYS[entity])
    as_number = entity in ("PHONE_NUMBER", "CREDIT_CARD") and value.isdigit() and rng.random() < 0.5
    record: dict = {
        "id": rng.randint(1, 10**6),
        key: int(value) if as_number else value,
        "updated": "2025-11-02T10:00:00Z",
    }
    if entity == "US_SSN" and rng.random() < 0.4:
        record[key] = value = value.replace("-", "").replace(" ", "")
    payload = {"status": "ok", "result": {"record": record, "note": "fetched from CRM"}}
    return EvalCase(case_id=f"json-{entity}-{i}", kind="json", clean=False, text=json.dumps(payload),
                    spans=[GoldSpan(entity=entity, variant=variant, start=0, end=len(str(value)), path=f"/result/record/{key}")])  # fmt: skip


def _json_credential_case(rng: random.Random, i: int) -> EvalCase:
    pw, variant = ids.password(rng)
    key = rng.choice(["password", "db_password", "client_secret", "apiKey", "x-api-key"])
    payload = {
        "service": "billing",
        "config": {"user": "svc_billing", key: pw, "host": "db.internal", "port": 5432},
    }
    return EvalCase(case_id=f"json-CREDENTIAL-{i}", kind="json", clean=False, text=json.dumps(payload),
                    spans=[GoldSpan(entity="CREDENTIAL", variant=variant, start=0, end=len(pw), path=f"/config/{key}")])  # fmt: skip


def build_eval_set(
    seed: int = 20251102, prose_per_entity: int = 120, json_per_entity: int = 40, clean: int = 600
) -> list[EvalCase]:
    """The whole set: positives per entity (prose and JSON), and clean near-miss prose and payloads."""
    rng = random.Random(seed)
    cases: list[EvalCase] = []
    for entity in PROSE:
        cases += [_prose_case(rng, entity, i) for i in range(prose_per_entity)]
        cases += [_json_case(rng, entity, i) for i in range(json_per_entity)]
    cases += [_url_password_case(rng, i) for i in range(prose_per_entity)]
    cases += [_json_credential_case(rng, i) for i in range(json_per_entity)]
    cases += [
        EvalCase(case_id=f"clean-prose-{i}", kind="prose", clean=True, text=t)
        for i, t in enumerate(clean_texts(rng, clean))
    ]
    cases += [
        EvalCase(case_id=f"clean-json-{i}", kind="json", clean=True, text=t)
        for i, t in enumerate(clean_payloads(rng, clean // 3))
    ]
    return cases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20251102)
    ap.add_argument("--summary", action="store_true", help="counts per entity and kind instead of JSON lines")
    args = ap.parse_args()
    cases = build_eval_set(args.seed)
    if args.summary:
        counts = Counter((s.entity, c.kind) for c in cases for s in c.spans)
        for (entity, kind), n in sorted(counts.items()):
            print(f"{entity:24s} {kind:6s} {n}")
        print("clean cases:", sum(c.clean for c in cases))
        return
    for c in cases:
        print(c.model_dump_json())


if __name__ == "__main__":
    main()
