"""Every recognizer: positives it must find, near-misses it must leave alone (through the real analyzer)."""

from __future__ import annotations

import json

import pytest

from governance.redaction import Redactor

POSITIVES = [
    ("EMAIL_ADDRESS", "write to Maria.Garcia+news@mail.co.uk today", "Maria.Garcia+news@mail.co.uk"),
    ("EMAIL_ADDRESS", "Reply-To: <ops@xn--bcher-kva.ch>", "ops@xn--bcher-kva.ch"),
    ("PHONE_NUMBER", "call me at (415) 867-5309 tonight", "(415) 867-5309"),
    ("PHONE_NUMBER", "office: +44 20 7946 0958", "+44 20 7946 0958"),
    ("PHONE_NUMBER", "Tokyo desk +81 3-1234-5678", "+81 3-1234-5678"),
    ("PHONE_NUMBER", "London 020 7946 0958 today", "020 7946 0958"),
    ("PHONE_NUMBER", "E.164: +4915123456789", "+4915123456789"),
    ("PHONE_NUMBER", "call 4158675309 after five", "4158675309"),
    ("CREDIT_CARD", "visa 4111 1111 1111 1111 exp 09/27", "4111 1111 1111 1111"),
    ("CREDIT_CARD", "mc 2-series 2221-0000-0000-0009", "2221-0000-0000-0009"),
    ("CREDIT_CARD", "amex 3782 822463 10005", "3782 822463 10005"),
    ("CREDIT_CARD", "card=5555555555554444;", "5555555555554444"),
    ("IBAN_CODE", "IBAN DE89 3704 0044 0532 0130 00 please", "DE89 3704 0044 0532 0130 00"),
    ("IBAN_CODE", "to GB82WEST12345698765432.", "GB82WEST12345698765432"),
    ("IP_ADDRESS", "login from 203.0.113.77 failed", "203.0.113.77"),
    ("IP_ADDRESS", "peer 2001:db8:85a3::8a2e:370:7334 reset", "2001:db8:85a3::8a2e:370:7334"),
    ("US_SSN", "SSN 536-22-8761 on file", "536-22-8761"),
    ("US_SSN", "social security number 536228761", "536228761"),
    ("OPENAI_API_KEY", "key=sk-proj-" + "aB3dE5fG7h" * 6, "sk-proj-" + "aB3dE5fG7h" * 6),
    ("OPENAI_API_KEY", "sk-" + "Ab1" * 16 + " leaked", "sk-" + "Ab1" * 16),
    ("ANTHROPIC_API_KEY", "x-api-key: sk-ant-api03-" + "Xy9_" * 20 + "AA", "sk-ant-api03-" + "Xy9_" * 20 + "AA"),
    ("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE is the id", "AKIAIOSFODNN7EXAMPLE"),
    ("AWS_ACCESS_KEY_ID", "temp ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A"),
    ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),  # fmt: skip
    ("GITHUB_TOKEN", "token ghp_" + "a1B2c3D4e5" * 4, "ghp_" + "a1B2c3D4e5" * 4),
    ("GITHUB_TOKEN", "github_pat_" + "A1b2C3d4E5" * 2 + "xy_" + "Q9w8E7r6T5" * 6, "github_pat_" + "A1b2C3d4E5" * 2 + "xy_" + "Q9w8E7r6T5" * 6),
    ("SLACK_TOKEN", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("STRIPE_KEY", 'stripe.api_key = "sk_live_' + "4eC39HqLyjWDarjtT1zdp7dc" + '"', "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("GOOGLE_API_KEY", "&key=AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    ("JWT", "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),  # fmt: skip
    ("PRIVATE_KEY", "k:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq0\nZm9vYmFy\n-----END RSA PRIVATE KEY-----\nok",
     "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq0\nZm9vYmFy\n-----END RSA PRIVATE KEY-----"),  # fmt: skip
    ("PRIVATE_KEY", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU"),
    ("URL_PASSWORD", "DATABASE_URL=postgres://app:s3cr3t!pw@db.internal:5432/app", "s3cr3t!pw"),
    ("CREDENTIAL", "password: hunter2!", "hunter2!"),
    ("API_TOKEN", "here's the token: hf_Qw3rTy8UiOp2AsDfGh4JkLzXcVbNm7Pq01", "hf_Qw3rTy8UiOp2AsDfGh4JkLzXcVbNm7Pq01"),
    ("API_TOKEN", "the new token is 7fK2pQ9zR4mW8xT1vB6nY3cL5hJ0dS, rotate it", "7fK2pQ9zR4mW8xT1vB6nY3cL5hJ0dS"),
    ("API_TOKEN", "Authorization: Bearer Zm9vYmFyOjEyMzQ1Njc4OTBhYmNkZWY", "Zm9vYmFyOjEyMzQ1Njc4OTBhYmNkZWY"),
    ("CREDENTIAL", 'api_key="q8Z-3kd9_xx"', "q8Z-3kd9_xx"),
    # a number Presidio rejects (published sample, never-issued range) is still an SSN where it is called one
    ("US_SSN", "my social security number is 123-45-6789", "123-45-6789"),
    ("US_SSN", "SSN: 078-05-1120", "078-05-1120"),
    ("NATIONAL_ID", "CPF do titular: 529.982.247-25", "529.982.247-25"),
    ("NATIONAL_ID", "codice fiscale RSSMRA85T10A562S", "RSSMRA85T10A562S"),
    ("PASSPORT_NUMBER", "passport no. K0391742, issued 2019", "K0391742"),
    ("DATE_OF_BIRTH", "DOB: 14/02/1977", "14/02/1977"),
    ("STREET_ADDRESS", "mail it to 9 Elm Grove, Bath", "9 Elm Grove"),
    ("GITHUB_TOKEN", "token github_pat_11AAB2CDE0abcdefghijKLMNOP_qrstuvwxYZ0123456789abcdEFGHijklmnOPQRstuvwxyz0123",
     "github_pat_11AAB2CDE0abcdefghijKLMNOP_qrstuvwxYZ0123456789abcdEFGHijklmnOPQRstuvwxyz0123"),  # fmt: skip
    ("URL_PASSWORD", "curl -u admin:Pa55w0rd-2024 https://api.example.com/v2", "Pa55w0rd-2024"),
    ("URL_PASSWORD", "curl --user 'deploy:blue horse' -X POST", "blue horse"),
    ("URL_PASSWORD", "http -a ci-bot:Zq8vLm2x https://api.example.com", "Zq8vLm2x"),
    ("URL_PASSWORD", "mysqldump -h db -u root -pS3cretPass shop > dump.sql", "S3cretPass"),
    ("URL_PASSWORD", "sshpass -p 'hunter2hunter2' ssh ops@10.0.0.5", "hunter2hunter2"),
    ("API_TOKEN", "bot = Bot('123456789:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0')", "AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0"),
    ("CREDENTIAL", "ssh ops@host; password for sudo: Qwerty!2345", "Qwerty!2345"),
    ("URL_PASSWORD", "docker login -u ci -p Passw0rd-77 registry.example.com", "Passw0rd-77"),
    ("URL_PASSWORD", "helm registry login r.io --username u --password 'two words'", "two words"),
    ("URL_PASSWORD", "redis-cli -h cache -a R3disPass! ping", "R3disPass!"),
    ("URL_PASSWORD", "openssl pkcs12 -in a.p12 -passin pass:Xy7!secret -nodes", "Xy7!secret"),
    ("CREDENTIAL", "//registry.npmjs.org/:_authToken=a1b2c3d4-e5f6-4711-8899-aabbccddeeff",
     "a1b2c3d4-e5f6-4711-8899-aabbccddeeff"),  # fmt: skip
    ("CREDENTIAL", "Cookie: theme=dark; sessionid=8b1f0c2d9e3a4f5b6c7d8e9f0a1b2c3d; lang=en", "8b1f0c2d9e3a4f5b6c7d8e9f0a1b2c3d"),
    ("CREDENTIAL", "Set-Cookie: sid=s%3AZx81kQ0pLm2vN7bR4tY6.Wq9; Path=/; HttpOnly", "s%3AZx81kQ0pLm2vN7bR4tY6.Wq9"),
    ("PHONE_NUMBER", "Appelez-moi au 06 12 34 56 78 demain", "06 12 34 56 78"),
    ("API_TOKEN", "post to https://discord.com/api/webhooks/123456789012345678/abcDEFghiJKLmnoPQRstuVWXyz0123456789abcDEFghiJKLmnoPQRstuVWX9z01",
     "123456789012345678/abcDEFghiJKLmnoPQRstuVWXyz0123456789abcDEFghiJKLmnoPQRstuVWX9z01"),  # fmt: skip
]  # fmt: skip

NEAR_MISSES = [
    "order ORD-2026-502799 shipped 2024-03-15T14:22:31Z",
    "upgrade to v1.2.3.4 (build 10.0.19045.2965), python 3.11.7",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b and uuid 123e4567-e89b-42d3-a456-426614174000",
    "epoch 1712345678 / 1712345678901 ms, took 1234.56 ms over 1,234,567 rows",
    "tracking 4111 1111 1111 1112 (not Luhn), ISBN 978-0-306-40615-7",
    "IBAN-like DE00370400440532013000 has a bad checksum",
    "scikit-learn, sk-learn-contrib and task-manager-sk-ui are packages",
    "git clone git@github.com:acme/widgets.git; npm i @types/node@20.11.5",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkq\n-----END CERTIFICATE-----",
    "def login(user: str, password: str): api_key=os.environ['OPENAI_API_KEY']; token_count: 15234",
    "redis://localhost:6379/0 and https://example.com/users/42 and https://example.com:8443/x",
    "placeholder keys: sk-... ghp_xxx AIza... xoxb-your-token eyJhbGciOi...",
    "sha 0123456789abcdef0123456789abcdef01234567 is 40 hex characters",
    "Time 14:22:31, ratio 16:9, std::vector<int>, ports 5432:5432",
    "call stack at 0x7ffd5e8c2a10, color #ff5733, viewport 1920x1080",
    "ticket #4155550132 was closed",  # bare ten digits with no phone word: an id
    "order number 4158675309 shipped",
    "the SSN-like 000-12-3456 and 666-12-3456 were never issued",
    "<EMAIL_ADDRESS_1> wrote to <PHONE_NUMBER_2> about <REDACTED>",
    "docker run -u 1000:1000 -v /data:/data app; sort -u names.txt; pip install -U requests",
    'curl -u "$API_USER:$API_TOKEN" https://api.example.com; curl -u user:${PASS} x',
    "mysql -u root -p shop  # asks for the password",
    "the record 123-45-6789 in batch 7",  # an SSN shape nobody calls an SSN, in a range Presidio rejects
    "query a=1; trace=0123456789abcdef0123456789abcdef; ok",  # ;-separated pairs that are no cookie header
    "the password of length 12 must hold a digit",
    "echo $TOKEN | docker login --password-stdin ghcr.io; ssh -p 2222 ops@host; git log -p --stat",
]


@pytest.mark.parametrize(
    ("entity", "text", "value"), POSITIVES, ids=[f"{p[0]}-{i}" for i, p in enumerate(POSITIVES)]
)
def test_recognizer_finds(plain: Redactor, entity: str, text: str, value: str) -> None:
    findings, _ = plain.analyzer.analyze(text)
    found = {
        (f.entity_type, text[f.start : f.end]) for f in findings if f.score >= plain.config.score_threshold
    }
    assert (entity, value) in found


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_miss_is_left_alone(plain: Redactor, text: str) -> None:
    out, _, counts = plain.redact_text(text)
    assert out == text and not counts


def test_secret_wins_overlap_with_email(plain: Redactor) -> None:
    out, _, counts = plain.redact_text("mysql://root:hunter2@db.example.com/app")
    assert out == "mysql://root:<URL_PASSWORD_1>@db.example.com/app"
    assert counts == {"URL_PASSWORD": 1}


def test_specific_secret_beats_generic_credential(plain: Redactor) -> None:
    key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    out, _, counts = plain.redact_payload(json.dumps({"api_key": key}))
    assert key not in out and counts == {"STRIPE_KEY": 1}


def test_aws_secret_needs_context(plain: Redactor) -> None:
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    assert plain.redact_text(f"value {secret}")[0] == f"value {secret}"
    assert plain.redact_text(secret, context=["aws_secret_access_key"])[0] == "<AWS_SECRET_ACCESS_KEY_1>"


def test_every_default_entity_has_a_positive() -> None:
    from governance.redaction.recognizers import DEFAULT_ENTITIES

    assert set(DEFAULT_ENTITIES) <= {p[0] for p in POSITIVES}
