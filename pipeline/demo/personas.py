"""Fake people, payloads and secrets the demo agents leak into their traffic (canaries for the PII tests).

All values are synthetic: Luhn-valid test cards, IBANs with valid checksums, reserved-range SSNs are not used
(Presidio rejects them), documentation IP ranges, and key-shaped strings that belong to no account.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Persona:
    name: str
    email: str
    phone: str
    card: str
    ssn: str
    iban: str
    ip: str
    city: str


PERSONAS: tuple[Persona, ...] = (
    Persona(
        "Dana Whitfield",
        "dana.whitfield@example.org",
        "+1 415-555-0134",
        "4111 1111 1111 1111",
        "524-71-3380",
        "DE89370400440532013000",
        "203.0.113.45",
        "Portland",
    ),
    Persona(
        "Marco Ilves",
        "marco.ilves@example.net",
        "+44 20 7946 0958",
        "5555 5555 5555 4444",
        "371-28-6154",
        "GB82WEST12345698765432",
        "198.51.100.23",
        "Leeds",
    ),
    Persona(
        "Aiko Tanabe",
        "aiko.t@example.com",
        "+81 3-1234-5678",
        "2223 0031 2200 3222",
        "612-40-9917",
        "FR1420041010050500013M02606",
        "192.0.2.77",
        "Osaka",
    ),
    Persona(
        "Priya Raman",
        "priya.raman@example.co.uk",
        "+1 (212) 555-0187",
        "3782 822463 10005",
        "455-19-2846",
        "NL91ABNA0417164300",
        "2001:db8::8a2e:370:7334",
        "Austin",
    ),
)

# Key-shaped canaries: the redactor must catch each; none is a live credential.
SECRETS: tuple[str, ...] = (
    "sk-proj-Zq8vN3kLm2Xp7Rt5Wy9Ab4Cd6Ef1Gh0Ij8Kl2Mn4Op6Qr",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_8f3Kd92LmQx7Rt4Vb6Nc1Zp0Ws5Ye3Ha9Ju2",
    "xoxb-2048613579-1357924680-AbCdEfGhIjKlMnOpQrStUvWx",
)


def canaries() -> list[str]:
    """Every raw value the demo sends that must never appear downstream of the raw topic."""
    out: list[str] = []
    for p in PERSONAS:
        out += [p.email, p.phone, p.card, p.ssn, p.iban, p.ip]
    return out + list(SECRETS)
