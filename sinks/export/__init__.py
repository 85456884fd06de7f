"""Exports of the store: the training set (default) or any query, as JSONL or Parquet plus a manifest;
layouts rl (TRL/OpenRLHF), dpo (preference pairs from feedback), verl, or the rows as they are.

sluice export --format parquet --out var/exports/train.parquet
"""
