"""Errors of the governance stage worker, under the one Sluice root error."""

from __future__ import annotations

from sluice.errors import SluiceError


class StagesError(SluiceError):
    """The stage worker cannot run (bad setup, no free data slot, ...)."""


class RejectedEvent(StagesError):
    """A record a stage will not process: it goes to the dead-letter topic with ``reason``."""

    def __init__(self, reason: str, error_type: str = "RejectedEvent") -> None:
        self.reason = reason
        self.error_type = error_type
        super().__init__(reason)


class OutputError(StagesError):
    """An output could not be delivered to the broker. Never dead-lettered: the worker exits without
    acknowledging the input, so it is processed again after the restart (at-least-once)."""
