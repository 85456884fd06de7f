"""Stores: the DuckDB audited-trajectory store and exports."""
