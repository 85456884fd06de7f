"""Calls to the rest of an OpenAI-compatible API, forwarded to a backend and not recorded."""
