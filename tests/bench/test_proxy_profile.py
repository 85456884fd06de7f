"""``bench.proxy_profile``'s attribution of py-spy samples to owners (pure: stacks as py-spy writes them)."""

from __future__ import annotations

from bench.proxy_profile import classify

LOOP = "run (asyncio/runners.py:118);BaseEventLoop._run_once (asyncio/base_events.py:1885);Handle._run (asyncio/events.py:80)"
RAW = "\n".join(
    [
        # a Sluice coroutine calling pydantic: Sluice's
        f"{LOOP};serve (pipeline/proxy/app.py:10);validate (pydantic/main.py:5) 7",
        # the server's parser calling back into Sluice's ASGI app: Sluice's (its innermost owned frame)
        "data_received (uvicorn/protocols/http/httptools_impl.py:1);__call__ (pipeline/proxy/app.py:20) 3",
        # the server alone, and the upstream client alone
        f"{LOOP};data_received (uvicorn/protocols/http/httptools_impl.py:1) 5",
        f"{LOOP};_request (aiohttp/client.py:9);_wrap (yarl/_url.py:3) 4",
        # the proxy's own upstream client is the client, not the proxy's work
        f"{LOOP};answer (pipeline/proxy/forwarding/backend_call.py:3);request (pipeline/proxy/forwarding/http_client.py:7) 2",
        # the loop's own frames above a callback do not make its sample Sluice's
        "<module> (app/cli.py:172);run_proxy (pipeline/proxy/server.py:74);"
        + LOOP
        + ";select (selectors.py:4) 6",
        "not a sample line",
    ]
)


def test_samples_go_to_the_innermost_owned_frame_below_the_loop() -> None:
    owners, functions = classify(RAW)
    assert owners == {"sluice": 10, "server": 5, "client": 6, "runtime": 6}
    assert functions == {"serve (pipeline/proxy/app.py)": 7, "__call__ (pipeline/proxy/app.py)": 3}
