"""Order lookup, in two model calls: call ``lookup_order`` with the order's id and the record fields it
wants, then answer a field of the tool's JSON result as ``STATUS=<status>``.

The first call is forced to the tool. Its parameters are a nested schema (an ``order_id`` with a
``pattern``, and ``fields``: an array of enum values, the record fields to return), so the server writes
the arguments under the schema and the model picks the characters and the fields; the harness runs the
lookup and sends back the order's id and the fields asked for as a ``tool`` message; the second call
answers in text. The agent shows one worked example (another order, its call asking for the status, its
result, its answer) first. The checker accepts the trajectory only when a call named the asked order and
asked for its status, AND the reply opens with ``STATUS=`` and that order's status; an order's record is a
pure function of its id, so the answer can be read back from the recorded question (``answer_from``).

SmolLM2-135M-Instruct got 0.27 of them right at temperature 1.0 with the earlier flat schema (an
``order_id`` only; 48 episodes, the call forced, as served); rerun for the nested one:

    python -m bench.task_probe --tasks order_lookup --samples 48
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from pipeline.learn.tasks.base import Problem
from pipeline.learn.tasks.tool_task import ToolCall, ToolTask

STATUSES = ("shipped", "delivered", "pending", "cancelled", "returned", "packed")
CARRIERS = ("DHL", "UPS", "FedEx", "USPS")
ORDER_ID = r"[A-Z]-[0-9]{4}"
FIELDS = ("status", "carrier", "items")  # the record fields a call may ask for
TOOL = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Look up an order by its id; returns the order record as JSON.",
        "parameters": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "pattern": f"^{ORDER_ID}$"},
                "fields": {
                    "type": "array",
                    "items": {"type": "string", "enum": list(FIELDS)},
                    "minItems": 1,
                    "maxItems": len(FIELDS),
                },
            },
            "required": ["order_id", "fields"],
        },
    },
}
_ASK = (
    "What is the status of order {oid}? Look it up with lookup_order, then reply exactly as STATUS=<status>."
)
_ASKED = re.compile(rf"What is the status of order ({ORDER_ID})\? Look it up")
_REPLY = re.compile(r"\s*STATUS\s*=\s*([a-z]+)")


def order_record(order_id: str) -> dict[str, Any]:
    """The order database: every well-formed id has one fixed record."""
    h = hashlib.sha256(order_id.encode()).digest()
    return {"order_id": order_id, "status": STATUSES[h[0] % len(STATUSES)],
            "carrier": CARRIERS[h[1] % len(CARRIERS)], "items": 1 + h[2] % 5}  # fmt: skip


def _example() -> list[dict[str, Any]]:
    oid = "B-2718"
    record = order_record(oid)
    call = {"id": "call_example", "type": "function",
            "function": {"name": "lookup_order", "arguments": json.dumps({"order_id": oid, "fields": ["status"]})}}  # fmt: skip
    return [
        {"role": "user", "content": _ASK.format(oid=oid)},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {
            "role": "tool",
            "tool_call_id": "call_example",
            "content": json.dumps({"order_id": oid, "status": record["status"]}),
        },
        {"role": "assistant", "content": f"STATUS={record['status']}"},
    ]


EXAMPLE = _example()


class OrderLookupTask(ToolTask):
    name = "order_lookup"
    max_tokens = 8
    # the longest call the schema allows, written compactly, fits even a tokenizer of one token per character
    tool_max_tokens = (
        len(json.dumps({"order_id": "X-0000", "fields": [max(FIELDS, key=len)] * len(FIELDS)})) + 8
    )
    tools = [TOOL]

    def draw(self, rng: random.Random) -> Problem:
        oid = f"{rng.choice('ACDEFGHJKLMNPQRSTUVWXYZ')}-{rng.randint(1000, 9999)}"
        messages = [*EXAMPLE, {"role": "user", "content": _ASK.format(oid=oid)}]
        return Problem(task=self.name, messages=messages, answer=self._answer(oid))

    @staticmethod
    def _answer(order_id: str) -> str:
        return json.dumps({"order_id": order_id, "status": order_record(order_id)["status"]})

    def answer_from(self, messages: list[dict[str, Any]]) -> str | None:
        """The asked order's id and status, from the last user message."""
        user = [m for m in messages if m.get("role") == "user"]
        found = _ASKED.search(user[-1].get("content") or "") if user else None
        return self._answer(found.group(1)) if found else None

    def run_tool(self, name: str, arguments: str) -> str:
        if name != "lookup_order":
            return json.dumps({"error": f"no tool {name}"})
        try:
            args = json.loads(arguments)
            oid, fields = args.get("order_id"), args.get("fields", list(FIELDS))
        except (ValueError, AttributeError):
            return json.dumps({"error": "arguments are not a JSON object"})
        if not isinstance(oid, str) or not re.fullmatch(ORDER_ID, oid):
            return json.dumps({"error": f"no order {oid!r}"})
        if not isinstance(fields, list) or not fields or not all(f in FIELDS for f in fields):
            return json.dumps({"error": f"fields must be a non-empty list of {list(FIELDS)}"})
        record = order_record(oid)
        return json.dumps({"order_id": oid, **{f: record[f] for f in FIELDS if f in fields}})

    def grade(self, problem: Problem, reply: str) -> float:
        got = _REPLY.match(reply)
        return 1.0 if got is not None and got.group(1) == json.loads(problem.answer)["status"] else 0.0

    def grade_episode(self, problem: Problem, calls: list[ToolCall], reply: str) -> float:
        want = json.loads(problem.answer)["order_id"]
        asked: list[Any] = []
        for c in calls:  # the asked order, with its status among the fields returned
            try:
                args = json.loads(c.arguments)
                fields = args.get("fields", list(FIELDS))
                status = isinstance(fields, list) and "status" in fields
                asked.append(c.name == "lookup_order" and args.get("order_id") == want and status)
            except (ValueError, AttributeError):
                asked.append(False)
        return self.grade(problem, reply) if any(asked) else 0.0
