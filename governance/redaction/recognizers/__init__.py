"""The recognizer catalogue: which class finds which entity type, the families, the default set.

Secrets form the ``SECRET`` family, so ``operators: {SECRET: drop}`` and ``entities: [SECRET]`` cover
all of them. ``recognizer_version()`` fingerprints the enabled recognizers for the redaction report.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from presidio_analyzer import EntityRecognizer

from governance.redaction.recognizers.anthropic_api_key_recognizer import AnthropicApiKeyRecognizer
from governance.redaction.recognizers.api_token_recognizer import ApiTokenRecognizer
from governance.redaction.recognizers.aws_access_key_id_recognizer import AwsAccessKeyIdRecognizer
from governance.redaction.recognizers.aws_secret_access_key_recognizer import AwsSecretAccessKeyRecognizer
from governance.redaction.recognizers.base import Prefiltered, SluicePatternRecognizer
from governance.redaction.recognizers.credential_recognizer import CredentialRecognizer
from governance.redaction.recognizers.date_of_birth_recognizer import DateOfBirthRecognizer
from governance.redaction.recognizers.email_address_recognizer import EmailAddressRecognizer
from governance.redaction.recognizers.github_token_recognizer import GithubTokenRecognizer
from governance.redaction.recognizers.google_api_key_recognizer import GoogleApiKeyRecognizer
from governance.redaction.recognizers.iban_code_recognizer import IbanCodeRecognizer
from governance.redaction.recognizers.ip_address_recognizer import IpAddressRecognizer
from governance.redaction.recognizers.jwt_recognizer import JwtRecognizer
from governance.redaction.recognizers.national_id_recognizer import NationalIdRecognizer
from governance.redaction.recognizers.openai_api_key_recognizer import OpenAiApiKeyRecognizer
from governance.redaction.recognizers.passport_recognizer import PassportRecognizer
from governance.redaction.recognizers.payment_card_recognizer import PaymentCardRecognizer
from governance.redaction.recognizers.person_location_recognizer import NER_ENTITIES
from governance.redaction.recognizers.phone_number_recognizer import PhoneNumberRecognizer
from governance.redaction.recognizers.private_key_recognizer import PrivateKeyRecognizer
from governance.redaction.recognizers.slack_token_recognizer import SlackTokenRecognizer
from governance.redaction.recognizers.street_address_recognizer import StreetAddressRecognizer
from governance.redaction.recognizers.stripe_key_recognizer import StripeKeyRecognizer
from governance.redaction.recognizers.url_password_recognizer import UrlPasswordRecognizer
from governance.redaction.recognizers.us_social_security_recognizer import UsSocialSecurityRecognizer

__all__ = [
    "DEFAULT_ENTITIES",
    "FAMILIES",
    "NER_ENTITIES",
    "PII_ENTITIES",
    "SECRET_ENTITIES",
    "Prefiltered",
    "SluicePatternRecognizer",
    "family_of",
    "pattern_recognizer_factories",
    "recognizer_version",
]

SECRET_RECOGNIZERS: tuple[type[SluicePatternRecognizer], ...] = (
    OpenAiApiKeyRecognizer,
    AnthropicApiKeyRecognizer,
    AwsAccessKeyIdRecognizer,
    AwsSecretAccessKeyRecognizer,
    GithubTokenRecognizer,
    SlackTokenRecognizer,
    StripeKeyRecognizer,
    GoogleApiKeyRecognizer,
    JwtRecognizer,
    PrivateKeyRecognizer,
    UrlPasswordRecognizer,
    ApiTokenRecognizer,
    CredentialRecognizer,
)
SECRET_ENTITIES: tuple[str, ...] = tuple(r.ENTITY for r in SECRET_RECOGNIZERS)
PII_ENTITIES: tuple[str, ...] = (
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "IBAN_CODE",
    "IP_ADDRESS",
    "US_SSN",
    "NATIONAL_ID",
    "PASSPORT_NUMBER",
    "DATE_OF_BIRTH",
    "STREET_ADDRESS",
)
DEFAULT_ENTITIES: tuple[str, ...] = PII_ENTITIES + SECRET_ENTITIES
FAMILIES: dict[str, tuple[str, ...]] = {"SECRET": SECRET_ENTITIES, "PII": PII_ENTITIES, "NER": NER_ENTITIES}


def family_of(entity_type: str) -> str:
    """``OPENAI_API_KEY`` -> ``SECRET``; types outside a family map to ``""``."""
    for family, members in FAMILIES.items():
        if entity_type in members:
            return family
    return ""


def pattern_recognizer_factories(
    phone_regions: list[str],
) -> dict[str, Callable[[str], EntityRecognizer]]:
    """Entity type -> factory(language) of its Sluice recognizer (NER is built by the provider)."""
    factories: dict[str, Callable[[str], EntityRecognizer]] = {
        "EMAIL_ADDRESS": lambda lang: EmailAddressRecognizer(supported_language=lang),
        "PHONE_NUMBER": lambda lang: PhoneNumberRecognizer(phone_regions, supported_language=lang),
        "CREDIT_CARD": lambda lang: PaymentCardRecognizer(supported_language=lang),
        "IBAN_CODE": lambda lang: IbanCodeRecognizer(supported_language=lang),
        "IP_ADDRESS": lambda lang: IpAddressRecognizer(supported_language=lang),
        "US_SSN": lambda lang: UsSocialSecurityRecognizer(supported_language=lang),
        "NATIONAL_ID": lambda lang: NationalIdRecognizer(supported_language=lang),
        "PASSPORT_NUMBER": lambda lang: PassportRecognizer(supported_language=lang),
        "DATE_OF_BIRTH": lambda lang: DateOfBirthRecognizer(supported_language=lang),
        "STREET_ADDRESS": lambda lang: StreetAddressRecognizer(supported_language=lang),
    }
    for cls in SECRET_RECOGNIZERS:
        factories[cls.ENTITY] = lambda lang, cls=cls: cls(supported_language=lang)
    return factories


def recognizer_version(recognizers: list[EntityRecognizer]) -> str:
    """Short fingerprint of the enabled recognizers, their versions and regions."""
    parts = sorted(
        f"{r.name}:{r.version}:{','.join(r.supported_entities)}:{','.join(getattr(r, 'regions', []))}"
        for r in recognizers
    )
    return "sluice-" + hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]
