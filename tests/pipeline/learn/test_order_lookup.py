"""The multi-step task: a lookup_order call, then the status of the asked order as STATUS=<status>; the
checker needs both the right call and the right answer, and the answer reads back from the question."""

from __future__ import annotations

import json
import random

from pipeline.learn.tasks import OrderLookupTask, ToolCall, build_tasks
from pipeline.learn.tasks.order_lookup import order_record
from trainers.serving.grammar import needs_grammar
from trainers.tiny_model import render_chat

TASK = OrderLookupTask()


def test_the_checker_wants_the_asked_order_looked_up_and_its_status_in_the_format() -> None:
    problem = TASK.draw(random.Random(3))
    oid = json.loads(problem.answer)["order_id"]
    status = order_record(oid)["status"]
    right = ToolCall("lookup_order", json.dumps({"order_id": oid}))
    other = ToolCall("lookup_order", json.dumps({"order_id": "Z-0000"}))
    assert TASK.grade_episode(problem, [right], f"STATUS={status}") == 1.0
    assert TASK.grade_episode(problem, [right], f"The status is {status}") == 0.0
    assert TASK.grade_episode(problem, [other], f"STATUS={status}") == 0.0  # right answer, wrong lookup
    assert TASK.grade_episode(problem, [], f"STATUS={status}") == 0.0
    wrong = next(s for s in ("shipped", "pending") if s != status)
    assert TASK.grade_episode(problem, [right], f"STATUS={wrong}") == 0.0
    asked = ToolCall("lookup_order", json.dumps({"order_id": oid, "fields": ["carrier", "status"]}))
    blind = ToolCall("lookup_order", json.dumps({"order_id": oid, "fields": ["carrier"]}))
    assert TASK.grade_episode(problem, [asked], f"STATUS={status}") == 1.0
    assert TASK.grade_episode(problem, [blind], f"STATUS={status}") == 0.0  # a guess: it never saw the status


def test_the_tool_returns_the_record_or_an_error_and_the_answer_reads_back_from_the_question() -> None:
    problem = TASK.draw(random.Random(5))
    oid = json.loads(problem.answer)["order_id"]
    assert json.loads(TASK.run_tool("lookup_order", json.dumps({"order_id": oid}))) == order_record(oid)
    assert "error" in json.loads(TASK.run_tool("lookup_order", "not json"))
    assert "error" in json.loads(TASK.run_tool("lookup_order", json.dumps({"order_id": "1234"})))
    some = json.loads(
        TASK.run_tool("lookup_order", json.dumps({"order_id": oid, "fields": ["items", "status"]}))
    )
    assert some == {
        "order_id": oid,
        "status": order_record(oid)["status"],
        "items": order_record(oid)["items"],
    }
    for bad in ([], ["price"], "status", [{"f": 1}]):
        assert "error" in json.loads(
            TASK.run_tool("lookup_order", json.dumps({"order_id": oid, "fields": bad}))
        )
    assert TASK.answer_from(problem.messages) == problem.answer
    assert TASK.problem_from(problem.messages) == problem
    assert [t.name for t in build_tasks(["order_lookup"])] == ["order_lookup"]


def test_the_tool_is_schema_forced_and_the_worked_example_renders_its_call_as_the_arguments() -> None:
    assert needs_grammar(TASK.tools[0]["function"]["parameters"])  # the server writes the arguments JSON
    text = render_chat(TASK.draw(random.Random(0)).messages)
    assert (
        '<|im_start|>assistant\n{"order_id": "B-2718", "fields": ["status"]}<|im_end|>\n'
        '<|im_start|>tool\n{"order_id": "B-2718", "status": "' in text
    )
