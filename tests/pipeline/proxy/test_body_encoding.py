"""Compressed request bodies: gzip and deflate are read (within the size limit once decompressed), any
other coding is a 415; a compressed chat call is recorded like any other."""

from __future__ import annotations

import gzip
import json
import zlib

import httpx
import pytest

from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.surfaces.request import decoded
from sluice.events import StepEvent
from tests.pipeline.proxy.conftest import KEY, LiveProxy

BODY = json.dumps({"model": "echo-1", "messages": [{"role": "user", "content": "compressed hello"}]}).encode()


def raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


@pytest.mark.parametrize(
    ("coding", "packed"),
    [
        (None, BODY),
        ("identity", BODY),
        ("gzip", gzip.compress(BODY)),
        ("x-gzip", gzip.compress(BODY)),
        ("GZIP", gzip.compress(BODY)),
        ("deflate", zlib.compress(BODY)),
        ("deflate", raw_deflate(BODY)),
    ],
)
def test_each_coding_gives_the_body_back(coding: str | None, packed: bytes) -> None:
    assert decoded(packed, coding, 1 << 20) == BODY


def test_what_is_refused() -> None:
    bomb = gzip.compress(b"{" + b" " * (5 << 20) + b"}")  # 5 MiB of spaces in about 5 KB
    assert len(bomb) < 10_000
    cases = [
        (bomb, "gzip", 413),
        (BODY, "gzip", 400),  # not gzip at all
        (gzip.compress(BODY)[:-12], "gzip", 400),  # cut short
        (BODY, "br", 415),
        (BODY, "gzip, br", 415),
    ]
    for body, coding, status in cases:
        with pytest.raises(ApiError) as err:
            decoded(body, coding, 1 << 20)
        assert err.value.status == status, (coding, err.value.message)


def test_a_gzip_chat_call_is_answered_and_recorded(live_proxy: LiveProxy) -> None:
    headers = {
        "Authorization": f"Bearer {KEY}",
        "content-type": "application/json",
        "content-encoding": "gzip",
    }
    resp = httpx.post(live_proxy.url + "/v1/chat/completions", headers=headers, content=gzip.compress(BODY))
    assert resp.status_code == 200, resp.text
    assert resp.json()["choices"][0]["message"]["content"] == "Echo: compressed hello"
    brotli = httpx.post(
        live_proxy.url + "/v1/chat/completions", headers={**headers, "content-encoding": "br"}, content=BODY
    )
    assert brotli.status_code == 415 and "Content-Encoding" in brotli.json()["error"]["message"]
    (step,) = live_proxy.events(1)
    assert isinstance(step, StepEvent) and step.trajectory_id == resp.headers["x-sluice-trajectory-id"]
    assert "compressed hello" in json.dumps(step.model_dump(mode="json"))
