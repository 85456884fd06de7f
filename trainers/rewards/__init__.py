"""Reward functions: verifiable checks, the logged traffic reward, and their weighted combination."""
