"""The control plane's processes: publishing ledger entries and overlay assignments, proposing and gating
updates. The pure decisions they act on live in ``governance.evolve``."""
