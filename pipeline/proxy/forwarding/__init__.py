"""Forwarding: what goes to a backend and comes back (pools, the recorded call, the unrecorded rest)."""
