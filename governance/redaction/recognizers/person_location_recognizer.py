"""PERSON and LOCATION from the offline spaCy model (``RedactionConfig.ner``), via Presidio's SpacyRecognizer.

Presidio runs the spaCy pipeline in its NLP engine and this recognizer reads the entities from the
artifacts. The prefilter (a capitalised word) lets the analyzer skip spaCy for texts that cannot hold
a name, which is most tool output; the analyzer also skips it when no NER entity was asked for.
"""

from __future__ import annotations

import re

from presidio_analyzer.predefined_recognizers import SpacyRecognizer

from governance.redaction.recognizers.base import Prefiltered

NER_ENTITIES = ("PERSON", "LOCATION")


class PersonLocationRecognizer(Prefiltered, SpacyRecognizer):
    PREFILTER = re.compile(r"[A-Z][a-z]")

    def __init__(self, entities: list[str] | None = None, supported_language: str = "en") -> None:
        super().__init__(
            supported_language=supported_language,
            supported_entities=list(entities or NER_ENTITIES),
            name=type(self).__name__,
        )
