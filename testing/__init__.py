"""Helpers that build test and benchmark workloads (synthetic trajectories, toy traffic). The product
packages never import this package."""
