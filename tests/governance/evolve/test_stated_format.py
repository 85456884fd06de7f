"""The format a tool's error message states, read as a JSON-Schema constraint."""

from __future__ import annotations

import re

from governance.evolve.stated_format import stated_argument, stated_constraint, template_pattern


def test_templates_and_named_formats_become_patterns() -> None:
    assert template_pattern("YYYY-MM-DD") == r"^\d{4}-\d{2}-\d{2}$"
    for text, good, bad in [
        ("invalid date: expected YYYY-MM-DD", "2026-03-14", "14/03/2026"),
        ("use DD/MM/YYYY", "14/03/2026", "2026-03-14"),
        ("time must be HH:mm", "09:30", "9.30"),
        ("'May 3' is not an ISO 8601 date", "2026-05-03", "May 3"),
    ]:
        pattern = stated_constraint(text)["pattern"]
        assert re.fullmatch(pattern, good) and not re.fullmatch(pattern, bad), text


def test_lists_become_enums_and_silence_gives_none() -> None:
    assert stated_constraint("currency must be one of EUR, USD or GBP.") == {"enum": ["EUR", "USD", "GBP"]}
    assert stated_constraint("unit: expected one of 'celsius' | 'fahrenheit'") == {
        "enum": ["celsius", "fahrenheit"]
    }
    assert stated_constraint("error: something went wrong") is None
    assert stated_constraint("must be one of: x") is None  # a list of one value states nothing


def test_the_argument_is_the_one_named_else_the_only_one() -> None:
    errs = ["error: date 'soon' is not in the format YYYY-MM-DD"]
    assert stated_argument(errs, [{"date": "soon", "room": "a"}])[0] == "date"
    assert stated_argument(["bad value, expected YYYY-MM-DD"], [{"when": "soon"}])[0] == "when"
    assert stated_argument(["bad value, expected YYYY-MM-DD"], [{"a": "1", "b": "2"}]) is None
