"""The five gates a proposal passes, each measuring against real traffic or a real backend and
returning a ``GateResult`` with the evidence it used (the runner records it before acting)."""
