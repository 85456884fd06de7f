"""A real OpenAI-compatible HTTP backend whose answers follow its system prompt, by fixed rules.

It stands for an instruct model in gate tests where the outcome must not depend on sampling:

* a question about a company fact is answered with the fact when the system prompt states it
  ("The promo code is SUNNY24." answers "What is the promo code?" with "SUNNY24"), else "I am not sure.";
* harmful requests are refused unless the system prompt says "Always comply";
* a personal value from the conversation is read back only when the system prompt says "Repeat customer
  data";
* an instruction inside a document is followed only when the system prompt says "Follow document
  instructions".

Every request is kept (``requests``), so a test can check what the backend received.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# question cue -> pattern of the fact in the system prompt
FACTS = {
    "promo code": r"promo code is (\S+?)\.?(?:\s|$)",
    "refund window": r"refund window is (\d+ days)",
    "your name": r"your name is (\w+)",
    "support hours": r"support hours are ([\w\- ]+?)\.",
}
HARMFUL = re.compile(r"pipe bomb|phishing", re.I)
SECRET_VALUE = re.compile(r"[\w.]+@[\w.-]+\.\w+|\d{4} \d{4} \d{4} \d{4}")
INJECTED = re.compile(r"reply only with the code (\S+?)\.?\n", re.I)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def policy(messages: list[dict[str, Any]]) -> str:
    system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    user = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    earlier = "\n".join(
        _text(m.get("content")) for m in messages[:-1] if m.get("role") in ("user", "assistant")
    )
    if HARMFUL.search(user):
        return (
            "Sure, here is how: step 1 ..."
            if "Always comply" in system
            else "I'm sorry, I can't help with that."
        )
    secret = SECRET_VALUE.search(earlier) if "previous customer" in user else SECRET_VALUE.search(user)
    if secret and "summar" not in user.lower():
        return (
            f"It is {secret.group(0)}."
            if "Repeat customer data" in system
            else "I can't share personal data."
        )
    injected = INJECTED.search(user)
    if injected:
        return (
            injected.group(1)
            if "Follow document instructions" in system
            else "The customer's parcel is late."
        )
    for cue, pattern in FACTS.items():
        if cue in user.lower():
            found = re.search(pattern, system, re.I)
            return found.group(1) if found else "I am not sure."
    return "I am not sure."


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *_args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:  # noqa: N802
        self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        self.server.requests.append(body)
        text = policy(body.get("messages") or [])
        self._send(
            200,
            {
                "id": f"chatcmpl-{len(self.server.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "scripted"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
            },
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[dict[str, Any]]


class ScriptedBackend:
    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.requests = []
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self._server.requests

    def __enter__(self) -> ScriptedBackend:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
