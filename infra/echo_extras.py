"""The echo backend's answers beyond chat and completions: embeddings, one model's card, and a reflection
of any other call.

- ``POST /v1/embeddings``: a deterministic unit vector per input (from the SHA-256 of its text or token
  ids; ``dimensions`` long, 8 by default), as floats or ``encoding_format: base64`` (little-endian
  float32, as OpenAI sends it); ``usage.prompt_tokens`` counts UTF-8 bytes, the echo "tokenizer".
- ``POST /tokenize`` (vLLM's, at the server root): the byte tokens of a chat rendered by the echo
  template (with the generation prompt unless ``add_generation_prompt`` is false) or of a ``prompt``.
- ``GET /v1/models/{id}``: the card ``/v1/models`` lists for ``id``, else 404.
- anything else below ``/v1``: 200 with what arrived (method, path, query, content type, body length and
  SHA-256, which of the headers a proxy must not pass on were present), sent in several body pieces so
  a relay is seen to stream. Tests read from it what a proxy forwarded.
"""

from __future__ import annotations

import base64
import hashlib
import math
import struct
from typing import Any

from infra.echo_reply import render_prompt
from infra.echo_reply import tokenize as tokenize_text

EXPOSED_HEADERS = ("authorization", "x-api-key", "cookie", "openai-organization")


def _vector(seed: bytes, dimensions: int) -> list[float]:
    raw = b""
    counter = 0
    while len(raw) < dimensions * 4:
        raw += hashlib.sha256(seed + counter.to_bytes(4, "little")).digest()
        counter += 1
    values = [int.from_bytes(raw[i * 4 : i * 4 + 4], "little") / 2**32 - 0.5 for i in range(dimensions)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def embeddings(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(status, JSON answer) of ``POST /v1/embeddings``."""
    inputs = body.get("input")
    if isinstance(inputs, str) or (isinstance(inputs, list) and inputs and isinstance(inputs[0], int)):
        inputs = [inputs]
    if not isinstance(inputs, list) or not inputs:
        return 400, error("input: a string, a list of strings or of token id lists", "invalid_request_error")
    dimensions = body.get("dimensions", 8)
    if not isinstance(dimensions, int) or not 1 <= dimensions <= 4096:
        return 400, error("dimensions: an integer from 1 to 4096", "invalid_request_error")
    data, tokens = [], 0
    for i, item in enumerate(inputs):
        if isinstance(item, str):
            seed, n = item.encode(), len(item.encode())
        elif isinstance(item, list) and all(isinstance(t, int) for t in item):
            seed, n = b"ids:" + ",".join(map(str, item)).encode(), len(item)
        else:
            return 400, error(f"input[{i}]: a string or a list of token ids", "invalid_request_error")
        tokens += n
        vec = _vector(seed, dimensions)
        if body.get("encoding_format") == "base64":
            emb: Any = base64.b64encode(struct.pack(f"<{dimensions}f", *vec)).decode()
        else:
            emb = vec
        data.append({"object": "embedding", "index": i, "embedding": emb})
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return 200, {"object": "list", "data": data, "model": body.get("model"), "usage": usage}


def tokenize(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(status, JSON answer) of ``POST /tokenize``."""
    messages, prompt = body.get("messages"), body.get("prompt")
    if isinstance(messages, list) and messages:
        text = render_prompt(messages)
        if body.get("add_generation_prompt") is False:
            text = text.removesuffix("<|assistant|>")
    elif isinstance(prompt, str):
        text = prompt
    else:
        return 400, error("give either messages or prompt", "invalid_request_error")
    ids = tokenize_text(text)
    return 200, {"count": len(ids), "max_model_len": 1 << 20, "tokens": ids}


def model_card(models: list[str], model: str) -> tuple[int, dict[str, Any]]:
    """(status, JSON answer) of ``GET /v1/models/{model}``."""
    if model not in models:
        return 404, error(f"no model {model!r}", "not_found_error")
    return 200, {"id": model, "object": "model", "created": 0, "owned_by": "echo"}


def reflection(scope: dict[str, Any], body: bytes) -> dict[str, Any]:
    """What arrived: the call as a relay passed it on, without the values of any credential."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    return {
        "method": scope["method"],
        "path": scope["path"],
        "query": scope.get("query_string", b"").decode("latin-1"),
        "content_type": headers.get("content-type"),
        "body_bytes": len(body),
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "headers_present": sorted(h for h in EXPOSED_HEADERS if h in headers),
    }


def error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
