"""Two checkers with opposite preferences on the same prompt: each rewards its own format, scores the
other's 0, gives partial credit for the right city otherwise; the canary task rewards an exact echo."""

from __future__ import annotations

import random

from pipeline.learn.tasks.city_format import CanaryEchoTask, CityFormatTask


def test_same_prompt_opposite_preferences() -> None:
    a, b = CityFormatTask("key"), CityFormatTask("paren")
    pa, pb = a.draw(random.Random(4)), b.draw(random.Random(4))
    assert pa.messages == pb.messages and pa.answer == pb.answer
    city = pa.answer
    assert a.answer_from(pa.messages) == city
    assert (a.grade(pa, f"CITY={city}"), b.grade(pb, f"CITY={city}")) == (1.0, 0.0)
    assert (a.grade(pa, f"{city} (city)"), b.grade(pb, f"{city} (city)")) == (0.0, 1.0)
    assert (a.grade(pa, f"It went to {city}."), b.grade(pb, f"It went to {city}.")) == (0.2, 0.2)
    assert a.grade(pa, "CITY=Atlantis") == 0.0 and b.grade(pb, "Atlantis (city)") == 0.0


def test_worked_examples_show_both_formats_in_either_order() -> None:
    task = CityFormatTask("key")
    firsts = set()
    for seed in range(8):
        p = task.draw(random.Random(seed))
        shown = [m["content"] for m in p.messages if m["role"] == "assistant"]
        assert sorted(shown) == ["CITY=Perth", "Oslo (city)"]
        assert p.messages[-1]["role"] == "user" and p.answer in p.messages[-1]["content"]
        firsts.add(shown[0])
    assert len(firsts) == 2


def test_canary_echo_rewards_the_exact_string() -> None:
    task = CanaryEchoTask("code 482193")
    p = task.draw(random.Random(0))
    assert "code 482193" in p.messages[0]["content"]
    assert task.grade(p, "code 482193") == 1.0 and task.grade(p, "code 482139") == 0.0
