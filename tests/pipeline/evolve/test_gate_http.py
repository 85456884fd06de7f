"""The gates' evaluation calls over real HTTP servers: a kept-alive connection is never reused as the
server closes it, and a failed idempotent call is tried again (a bounded number of times, never on a 4xx).

The first test is the reproduction of a gate that failed with ``RemoteProtocolError`` while the model
server logged nothing: a real ``sluice serve-model`` whose keep-alive timeout equals the client pool's
expiry (it ran with uvicorn's default 5 s then, and httpx's own expiry is 5 s too), rounds of 16 concurrent
calls separated by idles just under it, retries off so only the keep-alive can keep them answered. The
test runs the same race on a 5x shorter clock (a 1 s keep-alive, the client's 2 s expiry scaled to 0.4 s):
with the client's expiry equal to the server's timeout some calls fail
(``RemoteProtocolError``/``ReadError``); with it below the server's timeout none does.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pipeline.evolve.backend import EvalBackendError, EvalClient
from pipeline.evolve.http_calls import CallPolicy
from pipeline.evolve.loop_config import EvalBackendConfig
from pipeline.proxy.config import BackendConfig, ProxyConfig
from tests.pipeline.evolve.flaky_backend import FlakyBackend
from tests.trainers.serving.serve_process import serve_model

BODY = {"model": "echo-1", "messages": [{"role": "user", "content": "Say hi"}]}
# uvicorn's default keep-alive (5 s, serve-model ran with it) and the client's default expiry (2 s), both
# scaled by 1/5: the race between a server closing an idle connection and a client reusing it is the same
KEEP_ALIVE_S = 1.0
CLIENT_EXPIRY_S = CallPolicy().keepalive_expiry_s * KEEP_ALIVE_S / 5.0


def proxy_for(url: str) -> ProxyConfig:
    return ProxyConfig(backends=[BackendConfig(name="under-test", base_url=url, models=["*"])])


def test_calls_idle_around_the_servers_keep_alive_are_all_answered(tmp_path: Path) -> None:
    conc = 16  # as bench.evolve runs the gates
    cfg = EvalBackendConfig(
        max_tokens=2, concurrency=conc, http=CallPolicy(attempts=1, keepalive_expiry_s=CLIENT_EXPIRY_S)
    )
    body = {**BODY, "model": "sluice-tiny"}
    failed: list[str] = []
    with serve_model(tmp_path, extra={"keep_alive_s": int(KEEP_ALIVE_S)}) as server, \
            EvalClient(proxy_for(f"{server.url}/v1"), cfg) as ev, ThreadPoolExecutor(conc) as pool:  # fmt: skip

        def one(_i: int) -> None:
            try:
                ev.answer(body)
            except EvalBackendError as err:
                failed.append(str(err))

        list(pool.map(one, range(conc)))
        for i in range(8):  # idles of 0.975 .. 0.989 s: the server closes as the next call goes out
            time.sleep(KEEP_ALIVE_S - 0.025 + 0.002 * i)
            list(pool.map(one, range(conc)))
    assert failed == []


def test_a_dropped_connection_and_a_503_are_tried_again() -> None:
    cfg = EvalBackendConfig(http=CallPolicy(attempts=3, backoff_s=0.01))
    with FlakyBackend(["drop", "503"]) as backend, EvalClient(proxy_for(backend.base_url), cfg) as ev:
        assert ev.answer(BODY)["content"] == "ok"
        assert backend.seen == 3


def test_retries_are_bounded_and_name_the_attempts() -> None:
    cfg = EvalBackendConfig(http=CallPolicy(attempts=2, backoff_s=0.01))
    with FlakyBackend(["502", "502", "502"]) as backend, EvalClient(proxy_for(backend.base_url), cfg) as ev:
        with pytest.raises(EvalBackendError, match="answered 502") as got:
            ev.answer(BODY)
        assert got.value.attempts == 2 and backend.seen == 2
    with FlakyBackend(["drop", "drop"]) as backend, EvalClient(proxy_for(backend.base_url), cfg) as ev:
        with pytest.raises(EvalBackendError, match="RemoteProtocolError after 2 attempts") as got:
            ev.answer(BODY)
        assert got.value.attempts == 2 and backend.seen == 2


def test_a_4xx_is_not_tried_again() -> None:
    cfg = EvalBackendConfig(http=CallPolicy(attempts=3, backoff_s=0.01))
    with FlakyBackend(["400", "429"]) as backend, EvalClient(proxy_for(backend.base_url), cfg) as ev:
        with pytest.raises(EvalBackendError, match="answered 400") as got:
            ev.answer(BODY)
        assert got.value.attempts == 1 and backend.seen == 1
