"""OpenAI responses: a streamed chat completion as the Responses API event stream (choice 0).

``response.created`` / ``response.in_progress``; text as one ``message`` output item
(``output_item.added``, ``content_part.added``, ``output_text.delta``..., ``output_text.done``,
``content_part.done``, ``output_item.done``); each tool call as a ``function_call`` item
(``function_call_arguments.delta``/``.done``); finally ``response.completed`` with the whole response
(``response.incomplete`` when cut by max tokens, ``response.failed`` when the backend broke).
"""

from __future__ import annotations

from typing import Any

from pipeline.proxy.forwarding.chat_stream_assembler import ChatStreamAssembler, tool_call_id
from pipeline.proxy.openai_responses.protocol import ResponsesRequest
from pipeline.proxy.openai_responses.translate import call_item, message_item, response_id, to_response
from pipeline.proxy.surfaces.sse import encode_event


class ResponsesStreamWriter:
    def __init__(self, req: ResponsesRequest, rid: str | None = None, stored: bool = False) -> None:
        self.req = req
        self.seq = 0
        self.rid = rid or ""
        self.stored = stored
        self.asm = ChatStreamAssembler()
        self.started = False
        self.text_item: int | None = None  # output_index of the open message item
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}  # tool index -> {"output_index", "id", "name", "args"}
        self.next_output = 0

    def _ev(self, kind: str, payload: dict[str, Any]) -> bytes:
        data = {"type": kind, "sequence_number": self.seq, **payload}
        self.seq += 1
        return encode_event(kind, data)

    def _snapshot(self, status: str) -> dict[str, Any]:
        resp = {**self.asm.result(), "id": self.asm.head.get("id")}
        return to_response(resp, self.req, status, self.rid or None, self.stored)

    def _start(self, chat_id: Any) -> list[bytes]:
        self.started = True
        self.rid = self.rid or response_id(chat_id)
        snap = self._snapshot("in_progress")
        snap["output"] = []
        return [
            self._ev("response.created", {"response": snap}),
            self._ev("response.in_progress", {"response": snap}),
        ]

    def _close_text(self) -> list[bytes]:
        if self.text_item is None:
            return []
        idx, text = self.text_item, "".join(self.text)
        item = message_item(self.rid, text)
        part = item["content"][0]
        self.text_item = None
        common = {"item_id": item["id"], "output_index": idx, "content_index": 0}
        return [
            self._ev("response.output_text.done", {**common, "text": text, "logprobs": []}),
            self._ev("response.content_part.done", {**common, "part": part}),
            self._ev("response.output_item.done", {"output_index": idx, "item": item}),
        ]

    def feed(self, chunk: dict[str, Any]) -> list[bytes]:
        self.asm.feed(chunk)
        out: list[bytes] = [] if self.started else self._start(chunk.get("id"))
        for c in chunk.get("choices") or ():
            if not isinstance(c, dict) or c.get("index", 0) != 0:
                continue
            delta = c.get("delta") or {}
            if delta.get("content"):
                if self.text_item is None:
                    self.text_item = self.next_output
                    self.next_output += 1
                    item = message_item(self.rid, "", "in_progress")
                    item["content"] = []
                    out.append(
                        self._ev("response.output_item.added", {"output_index": self.text_item, "item": item})
                    )
                    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                    common = {"item_id": item["id"], "output_index": self.text_item, "content_index": 0}
                    out.append(self._ev("response.content_part.added", {**common, "part": part}))
                self.text.append(delta["content"])
                common = {"item_id": "msg_" + self.rid.removeprefix("resp_"), "output_index": self.text_item}
                out.append(
                    self._ev(
                        "response.output_text.delta",
                        {**common, "content_index": 0, "delta": delta["content"], "logprobs": []},
                    )
                )
            for tc in delta.get("tool_calls") or ():
                if not isinstance(tc, dict):
                    continue
                ti = tc.get("index", 0)
                fn = tc.get("function") or {}
                call = self.calls.get(ti)
                if call is None:
                    out += self._close_text()
                    cid = tc.get("id") or tool_call_id(self.asm.head.get("id"), 0, ti)
                    call = self.calls[ti] = {
                        "output_index": self.next_output,
                        "id": cid,
                        "name": fn.get("name", ""),
                        "args": [],
                    }
                    self.next_output += 1
                    item = call_item(
                        {"id": cid, "function": {"name": call["name"], "arguments": ""}}, "in_progress"
                    )
                    out.append(
                        self._ev(
                            "response.output_item.added", {"output_index": call["output_index"], "item": item}
                        )
                    )
                if fn.get("arguments"):
                    call["args"].append(fn["arguments"])
                    item_id = "fc_" + call["id"].removeprefix("call_")
                    payload = {
                        "item_id": item_id,
                        "output_index": call["output_index"],
                        "delta": fn["arguments"],
                    }
                    out.append(self._ev("response.function_call_arguments.delta", payload))
        return out

    def reply(self) -> dict[str, Any]:
        """The answer streamed so far as the assistant chat message (ids as the agent saw them)."""
        msg: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        calls = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": "".join(c["args"])},
            }
            for c in self.calls.values()
        ]
        if calls:
            msg["tool_calls"] = calls
        return msg

    def end(self, error: str | None) -> list[bytes]:
        out: list[bytes] = [] if self.started else self._start(None)
        out += self._close_text()
        for call in self.calls.values():
            args = "".join(call["args"])
            item = call_item({"id": call["id"], "function": {"name": call["name"], "arguments": args}})
            payload = {"item_id": item["id"], "output_index": call["output_index"], "arguments": args}
            out.append(self._ev("response.function_call_arguments.done", payload))
            out.append(
                self._ev("response.output_item.done", {"output_index": call["output_index"], "item": item})
            )
        if error is not None:
            snap = self._snapshot("failed")
            snap["error"] = {"code": "server_error", "message": error}
            return [*out, self._ev("response.failed", {"response": snap})]
        snap = self._snapshot("completed")
        kind = "response.incomplete" if snap["status"] == "incomplete" else "response.completed"
        return [*out, self._ev(kind, {"response": snap})]
