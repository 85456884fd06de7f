"""Forwarding: what goes to a backend and comes back (pooled upstreams, the recorded model call, and the
unrecorded pass-through of the rest of the API)."""
