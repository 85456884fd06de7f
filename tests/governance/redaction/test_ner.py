"""The NER switch: PERSON/LOCATION from the offline spaCy model (slower: loads the model once)."""

from __future__ import annotations

from collections.abc import Callable

from governance.redaction import Redactor


def test_ner_finds_people_and_places_with_stable_placeholders(
    redactor_factory: Callable[..., Redactor],
) -> None:
    ner = redactor_factory(ner=True, hash_key="k")
    assert {"PERSON", "LOCATION"} <= set(ner.entities)
    out, state, counts = ner.redact_text(
        "Angela Merkel met Barack Obama in Berlin. Write to angela@example.com."
    )
    assert "Merkel" not in out and "Obama" not in out and "Berlin" not in out
    assert counts["PERSON"] == 2 and counts["LOCATION"] == 1 and counts["EMAIL_ADDRESS"] == 1
    again, _, _ = ner.redact_text("Barack Obama flew home.", state)
    assert again == "<PERSON_2> flew home."
    # Lower-case tool output skips spaCy (prefilter) and pattern-only entities still work.
    assert ner.redact_text("exit code 0; 3 passed")[0] == "exit code 0; 3 passed"
    off = redactor_factory(hash_key="k")
    assert off.redact_text("Barack Obama flew home.")[0] == "Barack Obama flew home."
