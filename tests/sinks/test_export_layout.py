"""The RL/SFT export layout: prompt/completion/messages, token sequences with masks."""

from __future__ import annotations

from sinks.export.layout import RL_SCHEMA, openai_message, rl_rows, text_content
from sluice.events import Message, ToolCall, reconstruct_messages
from testing.samples import make_trajectory


def test_trajectory_row_splits_prompt_and_completion() -> None:
    t = make_trajectory("t1", n_steps=3, reward=0.5, session_id="s1")
    (row,) = rl_rows(t, t.steps)
    assert set(row) == set(RL_SCHEMA.names)
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["prompt"] + row["completion"] == row["messages"]
    assert len(row["messages"]) == len(reconstruct_messages(t.steps)) == 7
    assert row["completion"][-1]["content"] == "2 + 2 = 4."
    assert row["reward"] == 0.5 and row["rewards"][0]["value"] == 0.5
    assert row["group_id"] == "s1" and row["model_version"] == "tiny-1" and row["policy_version"] == "p1"


def test_token_sequence_masks_model_tokens() -> None:
    t = make_trajectory("t1", n_steps=3)
    (row,) = rl_rows(t, t.steps)
    n_generated = sum(len(s.action.choices[0].token_ids) for s in t.steps)
    n_env = sum(len(s.action.prompt_token_ids) for s in t.steps[1:])
    assert row["prompt_token_ids"] == t.steps[0].action.prompt_token_ids
    assert len(row["completion_token_ids"]) == n_generated + n_env
    assert sum(row["completion_mask"]) == n_generated
    assert len(row["completion_logprobs"]) == len(row["completion_mask"])
    assert all(
        lp == 0.0 for lp, m in zip(row["completion_logprobs"], row["completion_mask"], strict=True) if not m
    )
    # the token stream of step 2 is its full prompt followed by its completion
    s2 = t.steps[2]
    full = row["prompt_token_ids"] + row["completion_token_ids"]
    start = s2.action.prompt_token_prefix_len
    assert full[start : start + len(s2.action.prompt_token_ids)] == s2.action.prompt_token_ids


def test_missing_token_ids_give_none() -> None:
    t = make_trajectory("t1", n_steps=2)
    t.steps[1].action.prompt_token_ids = None
    (row,) = rl_rows(t, t.steps)
    assert row["prompt_token_ids"] is None and row["completion_mask"] is None


def test_step_granularity_gives_one_row_per_call() -> None:
    t = make_trajectory("t1", n_steps=3)
    rows = rl_rows(t, t.steps, "step")
    assert [r["step_index"] for r in rows] == [0, 1, 2]
    assert len(rows[2]["prompt"]) == 6 and rows[2]["completion"][0]["role"] == "assistant"
    assert rows[1]["completion_token_ids"] == t.steps[1].action.choices[0].token_ids
    assert rows[1]["prompt_token_ids"][: t.steps[1].action.prompt_token_prefix_len] == (
        rows[0]["prompt_token_ids"] + rows[0]["completion_token_ids"]
    )


def test_messages_are_openai_shaped() -> None:
    m = Message(
        role="assistant", content=None, tool_calls=[ToolCall(id="c1", name="ls", arguments='{"p":"/"}')]
    )
    assert openai_message(m)["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"p":"/"}'}}
    ]
    assert text_content([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]) == "ab"
    assert text_content([{"type": "image_url", "image_url": {"url": "x"}}]).startswith("[{")
