"""Console rendering and filters: every redaction marker is highlighted and escaped; filter values are
validated and quoted."""

from __future__ import annotations

import pytest

from pipeline.console.queries import FilterError, TrajectoryFilter, trajectories_sql
from pipeline.console.render import highlight_redactions, learning_svg, message_text


def test_every_operator_output_is_highlighted_and_text_is_escaped() -> None:
    text = "mail <EMAIL_ADDRESS_1>, card **** **** **** 1111, key=<REDACTED>, ssn <US_SSN:9f3a>, <b>x</b>"
    html = str(highlight_redactions(text))
    for marker in (
        "&lt;EMAIL_ADDRESS_1&gt;",
        "**** **** **** 1111",
        "&lt;REDACTED&gt;",
        "&lt;US_SSN:9f3a&gt;",
    ):
        assert f'<mark class="redacted" title="redacted">{marker}</mark>' in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>" not in html
    assert "<mark" not in str(highlight_redactions("a * b ** c, <lowercase>"))


def test_message_text_shows_tool_calls() -> None:
    msg = {"role": "assistant", "content": None, "tool_calls": [{"name": "lookup", "arguments": '{"id": 1}'}]}
    assert message_text(msg) == '→ lookup({"id": 1})'


def test_filters_validate_and_quote() -> None:
    f = TrajectoryFilter.from_query(
        {
            "tenant": "ac'me",
            "eligibility": "train",
            "rewarded": "yes",
            "reward_min": "0.5",
            "policy_version": "v1",
        }
    )
    sql = trajectories_sql(f)
    assert "tenant = 'ac''me'" in sql and "eligibility = 'train'" in sql and "reward >= 0.5" in sql
    assert "list_contains(model_versions, 'v1')" in sql
    for bad in ({"eligibility": "everything"}, {"reward_min": "1; DROP"}, {"grade": "x"}):
        with pytest.raises(FilterError):
            TrajectoryFilter.from_query(bad)


def test_learning_svg_plots_each_version() -> None:
    svg = str(learning_svg([("v1", 0.1), ("v2", 0.4), ("v3", None)]))
    assert svg.count("<circle") == 2 and "v2: 0.400" in svg
    assert "No rewarded" in str(learning_svg([]))


def test_message_text_drops_runs_of_blank_lines() -> None:
    assert message_text({"role": "assistant", "content": "a\n\n\n  \nb\n\n"}) == "a\nb"
