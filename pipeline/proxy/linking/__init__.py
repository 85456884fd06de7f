"""Linking: which trajectory a call belongs to, which messages are new, and its token prefix (pure)."""
