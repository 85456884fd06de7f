"""Errors of the control plane's processes."""

from __future__ import annotations

from sluice.errors import SluiceError


class EvolveError(SluiceError):
    """Root of the control plane's errors."""


class PublishError(EvolveError):
    """A ledger entry or an overlay assignment was not acknowledged by the broker (nothing changed)."""
