"""The evolution control plane's services: the gates a proposal passes, the loop that drives them, and
the `sluice evolve` commands."""
