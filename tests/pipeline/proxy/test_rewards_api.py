"""The reward/feedback/end API publishes RewardEvents and a TrajectoryEndEvent; bad input is a clear 4xx."""

from __future__ import annotations

import httpx
import openai

from sluice.events import RewardEvent, TrajectoryEndEvent
from tests.pipeline.proxy.conftest import KEY, LiveProxy


def test_rewards_feedback_and_end(live_proxy: LiveProxy) -> None:
    auth = {"authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=live_proxy.url, headers=auth, timeout=10) as http:
        # a reward may arrive before the trajectory exists
        early = http.post(
            "/v1/trajectories/job-1/rewards", json={"value": 0.25, "name": "early", "source": "grader"}
        )
        assert early.status_code == 202 and early.json()["trajectory_id"] == "acme~job-1"

        client = openai.OpenAI(base_url=live_proxy.url + "/t/job-1/v1", api_key=KEY, max_retries=0)
        client.chat.completions.create(model="plain", messages=[{"role": "user", "content": "do it"}])
        client.chat.completions.create(model="plain", messages=[{"role": "user", "content": "again"}])

        assert (
            http.post(
                "/v1/trajectories/job-1/rewards", json={"value": 1, "kind": "binary", "step": 1, "id": "r-1"}
            ).status_code
            == 202
        )
        assert (
            http.post(
                "/v1/trajectories/job-1/rewards", json={"kind": "critique", "comment": "too long"}
            ).status_code
            == 202
        )
        fb = http.post(
            "/v1/trajectories/job-1/feedback", json={"kind": "thumbs_down", "step": 0, "detail": "wrong file"}
        )
        assert fb.status_code == 202
        end = http.post("/v1/trajectories/job-1/end", json={"outcome": "success"})
        assert end.status_code == 202 and end.json()["step_count"] == 2

        # bad input: clear 4xx, nothing published
        problems = [
            ("/rewards", {"value": "high"}, "value"),
            ("/rewards", {"value": 2, "kind": "binary"}, "binary"),
            ("/rewards", {"kind": "critique"}, "critique"),
            ("/rewards", {"value": 1, "colour": "red"}, "colour"),
            ("/feedback", {"kind": "meh"}, "kind"),
            ("/end", {"step_count": -1}, "step_count"),
        ]
        for path, body, word in problems:
            resp = http.post("/v1/trajectories/job-1" + path, json=body)
            assert resp.status_code == 400 and word in resp.json()["error"]["message"], (path, resp.text)
        assert (
            http.post(
                "/v1/trajectories/job-1/rewards", content=b"{", headers={"content-type": "application/json"}
            ).status_code
            == 400
        )
        assert http.post("/v1/trajectories/bad id!/rewards", json={"value": 1}).status_code == 400
        assert (
            httpx.post(live_proxy.url + "/v1/trajectories/job-1/rewards", json={"value": 1}).status_code
            == 401
        )

    rewards = live_proxy.events(4, topic="rewards_raw")
    assert all(
        isinstance(r, RewardEvent) and r.trajectory_id == "acme~job-1" and r.tenant == "acme" for r in rewards
    )
    by_name = {r.reward.name: r.reward for r in rewards}
    assert by_name["early"].value == 0.25 and by_name["early"].source == "grader"
    assert by_name["reward"].kind in ("binary", "critique")
    binary = next(r for r in rewards if r.reward.kind == "binary")
    assert (
        binary.reward.step_index == 1
        and binary.reward.reward_id == "r-1"
        and binary.event_id == "reward:acme:r-1"
    )
    critique = next(r for r in rewards if r.reward.kind == "critique")
    assert critique.reward.critique == "too long" and critique.reward.value is None
    feedback = by_name["thumbs_down"]
    assert feedback.kind == "feedback" and feedback.step_index == 0 and feedback.critique == "wrong file"

    steps = live_proxy.events(3)
    assert [type(e).__name__ for e in steps] == [
        "StepEvent",
        "StepEvent",
        "TrajectoryEndEvent",
    ]  # one key: ordered
    end_event = steps[-1]
    assert (
        isinstance(end_event, TrajectoryEndEvent)
        and end_event.outcome == "success"
        and end_event.step_count == 2
    )
    assert end_event.governance.consent.training is True
