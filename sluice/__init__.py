"""Sluice core: the event protocol, the shared broker and topic config, the root error, the frozen base."""

__version__ = "0.1.0"
