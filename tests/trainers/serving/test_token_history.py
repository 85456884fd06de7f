"""The server's token history: a re-sent conversation keeps the ids it was served with, so the next prompt's
ids extend the previous prompt + completion even where the tokenizer would split the text otherwise."""

from __future__ import annotations

from trainers.serving.token_history import TokenHistory
from trainers.tiny_model import build_tokenizer, render_chat

TOK = build_tokenizer()


def _ids(text: str) -> list[int]:
    return TOK(text, add_special_tokens=False)["input_ids"]


def test_a_re_sent_history_starts_with_the_served_prompt_and_completion_ids() -> None:
    history = TokenHistory(TOK)
    first = [{"role": "user", "content": "order A-1042?"}]
    text = render_chat(first)
    prompt = history.encode(text)
    assert prompt == _ids(text) and history.reused == 0
    completion = _ids('{"id": 7}') + [TOK.convert_tokens_to_ids("<|im_end|>")]
    history.remember(text, prompt, completion)
    nxt = [*first, {"role": "assistant", "content": None,
                    "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"id": 7}'}}]},
           {"role": "tool", "tool_call_id": "c", "content": "{}"}]  # fmt: skip
    ids = history.encode(render_chat(nxt))
    assert ids[: len(prompt) + len(completion)] == prompt + completion and history.reused == 1
    assert TOK.decode(ids) == render_chat(nxt)


def test_the_served_split_is_kept_even_where_the_tokenizer_would_split_the_text_otherwise() -> None:
    history = TokenHistory(TOK)
    served = [901, 902]  # stands for a split of "hi" the tokenizer would not make (a sampled one)
    history.remember("hi", served, _ids("!"))
    assert history.encode("hi! more") == [*served, *_ids("!"), *_ids(" more")]


def test_the_history_keeps_the_most_recent_sequences_only() -> None:
    history = TokenHistory(TOK, capacity=2)
    for word in ("a", "b", "c"):
        history.remember(word, _ids(word), _ids("!"))
    history.encode("a!x")
    history.encode("c!x")
    assert history.reused == 1  # "a!" was dropped, "c!" is kept


def test_conversations_with_the_same_text_keep_their_own_ids() -> None:
    history = TokenHistory(TOK)
    history.remember("ask", [1, 2], [3], conversation="a")  # one split of the same text...
    history.remember("ask", [4, 5], [6], conversation="b")  # ...and another, sampled in a second trajectory
    tail = _ids(" next")
    assert history.encode("ask" + TOK.decode([3]) + " next", "a")[:3] == [1, 2, 3]
    assert history.encode("ask" + TOK.decode([6]) + " next", "b") == [4, 5, 6, *tail]
    assert history.encode("ask" + TOK.decode([6]) + " next") == _ids("ask" + TOK.decode([6]) + " next")


def test_a_completion_is_remembered_under_the_text_the_client_sends_back_when_given() -> None:
    history = TokenHistory(TOK)
    served = [950]  # stands for a token whose decode alone differs from the bytes it wrote in context
    history.remember("hi", _ids("hi"), served, completion_text='{"a": 1}')
    assert history.encode('hi{"a": 1} more') == [*_ids("hi"), *served, *_ids(" more")]


def test_forgetting_a_conversation_drops_only_its_sequences() -> None:
    history = TokenHistory(TOK)
    history.remember("ask", [1, 2], [3], conversation="acme~t1")
    history.remember("ask more", [1, 2, 3, 4], [5], conversation="acme~t1")
    history.remember("ask", [4, 5], [6], conversation="acme~t2")
    history.remember("ask", [7], [8])  # no conversation named: never tied to an erased one
    assert history.forget({"acme~t1", "acme~t9"}) == 2
    assert history.encode("ask" + TOK.decode([3]), "acme~t1") == _ids("ask" + TOK.decode([3]))
    assert history.encode("ask" + TOK.decode([6]), "acme~t2")[:3] == [4, 5, 6]
    assert history.forget({"acme~t1"}) == 0
