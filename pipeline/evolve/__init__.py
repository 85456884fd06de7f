"""The control plane's plumbing: reading the store for diagnosis, drafting proposals, the ledger and the
overlays topic, and the ``sluice evolve`` commands."""
