"""Sluice core: the event protocol, the config, the root error and the CLI."""

__version__ = "0.1.0"
