"""Anthropic's paging of the model list: limit, after_id, before_id, and what is refused."""

from __future__ import annotations

import pytest

from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.openai_models.anthropic_shape import anthropic_card, anthropic_page

CARDS = [{"id": f"m{i}", "object": "model", "created": 1_700_000_000 + i, "owned_by": "x"} for i in range(5)]


def ids(page: dict) -> list[str]:
    return [m["id"] for m in page["data"]]


def test_pages_forward_and_back() -> None:
    first = anthropic_page(CARDS, {"limit": "2"})
    assert ids(first) == ["m0", "m1"] and first["has_more"] and first["last_id"] == "m1"
    second = anthropic_page(CARDS, {"limit": "2", "after_id": "m1"})
    assert ids(second) == ["m2", "m3"] and second["has_more"]
    last = anthropic_page(CARDS, {"limit": "2", "after_id": "m3"})
    assert ids(last) == ["m4"] and not last["has_more"] and last["first_id"] == last["last_id"] == "m4"
    back = anthropic_page(CARDS, {"limit": "2", "before_id": "m4"})
    assert ids(back) == ["m2", "m3"] and back["has_more"]
    start = anthropic_page(CARDS, {"limit": "2", "before_id": "m2"})
    assert ids(start) == ["m0", "m1"] and not start["has_more"]
    assert ids(anthropic_page(CARDS, {})) == [c["id"] for c in CARDS]
    empty = anthropic_page([], {})
    assert empty == {"data": [], "has_more": False, "first_id": None, "last_id": None}


def test_a_card_has_what_the_sdk_requires() -> None:
    card = anthropic_card(CARDS[0])
    assert card == {
        "type": "model",
        "id": "m0",
        "display_name": "m0",
        "created_at": "2023-11-14T22:13:20Z",
        "lifecycle": "active",
    }


@pytest.mark.parametrize(
    "query",
    [{"limit": "0"}, {"limit": "1001"}, {"limit": "ten"}, {"after_id": "nope"}, {"before_id": "nope"}],
)
def test_bad_paging_is_a_400(query: dict) -> None:
    with pytest.raises(ApiError) as err:
        anthropic_page(CARDS, query)
    assert err.value.status == 400
