"""Exports of the store: the training set (default) or any query, as JSONL or Parquet plus a manifest.

sluice export --format parquet --out var/exports/train.parquet
"""
