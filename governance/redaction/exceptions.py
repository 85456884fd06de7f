"""Errors of the redaction package, under the one Sluice root error."""

from __future__ import annotations

from sluice.errors import SluiceError


class RedactionError(SluiceError):
    """Redaction could not be carried out (the event must not be published unredacted)."""


class RedactionTimeout(RedactionError):
    """One event took longer than ``redaction.step_timeout_s``: it is withheld, never published as it is."""


class RedactionConfigError(RedactionError):
    """The redaction config names an unknown entity, family, operator target or NER model."""
