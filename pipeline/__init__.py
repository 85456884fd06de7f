"""Plumbing: the proxy, topics, the Faust app and the stage wiring. Decisions live in ``governance``."""
