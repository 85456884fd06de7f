"""Proposers: rule-based ones that derive the update from the rows, and one that asks a model."""
