"""Synthetic, labelled, seeded data for the benchmarks (nothing is downloaded).

python -m bench.data.redaction_eval_set --summary     # the redaction evaluation set
"""
