"""PII and secret redaction of step events: Presidio recognizers, offline, cached.

Public API (the redaction stage codes against exactly this):

    from governance.redaction import Redactor, PlaceholderState
    redactor = Redactor.from_config(cfg.redaction)                 # builds engines once
    new_event, new_state = redactor.redact_event(event, state)     # state None = new trajectory
    outs = redactor.redact_many(events, states)                    # events arriving together: one NER pass
    text, state, counts = redactor.redact_text(text, state, context=None)

Benchmark: ``python -m bench.redaction``.
"""

from __future__ import annotations

from governance.redaction.exceptions import RedactionConfigError, RedactionError
from governance.redaction.redactor import Redactor
from governance.redaction.state import PlaceholderState

__all__ = ["PlaceholderState", "RedactionConfigError", "RedactionError", "Redactor"]
