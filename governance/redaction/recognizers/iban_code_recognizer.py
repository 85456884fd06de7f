"""IBANs: Presidio's recognizer (country formats and the mod-97 checksum) behind a cheap prefilter.

The prefilter wants the country code in capitals, as IBANs are printed; an all-lower-case IBAN
(``de89 3704 …``) is not looked for (a case-insensitive prefilter costs twice as much on every text).
"""

from __future__ import annotations

import re

from presidio_analyzer.predefined_recognizers import IbanRecognizer

from governance.redaction.recognizers.base import Prefiltered


class IbanCodeRecognizer(Prefiltered, IbanRecognizer):
    PREFILTER = re.compile(r"[A-Z]{2}\d{2}[ -]?[A-Za-z0-9]{4}")

    def __init__(self, supported_language: str = "en") -> None:
        super().__init__(supported_language=supported_language, name=type(self).__name__)
