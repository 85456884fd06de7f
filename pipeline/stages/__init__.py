"""The governance stages on Faust: thin adapters that move events between topics and tables and call the
decisions in ``governance/`` (redaction, eligibility, reward join, replay grading).

    sluice stages --config infra/sluice.yaml
"""
