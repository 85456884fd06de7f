"""What ``bench.proxy_servers`` measures: the proxy app or a bare forwarder, served by one ASGI server.

    python -m bench.server_variants --server granian --app proxy --config proxy.yaml --port 8900
    python -m bench.server_variants --server uvicorn --app forward --client httpx --backend URL --port 8901

Servers: ``uvicorn`` (httptools, uvloop), ``uvicorn-asyncio`` (httptools on the standard asyncio loop),
``granian`` (Rust HTTP/1 server, embedded in a uvloop loop, one runtime thread), ``granian-rusttask``
(the same with granian's Rust task implementation), ``granian-worker`` (granian's own process mode: a
supervisor and one worker process on uvloop, as ``granian --interface asgi`` runs). Apps: ``proxy`` (the
real proxy app of the config, ``pipeline.proxy.app.create_app``) or ``forward`` (reads the body, POSTs it
to ``--backend`` with ``--client``, answers with the backend's status and body: the upstream client's
cost alone). Clients: ``aiohttp``, ``httpx``, ``httpx2`` and ``pool`` (the proxy's own,
``pipeline.proxy.forwarding.http_client``), each one pooled, keep-alive client for the run.
Every variant has its access log off and runs its app's lifespan.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sluice.heap import settle_heap

SERVERS = ("uvicorn", "uvicorn-asyncio", "granian", "granian-rusttask", "granian-worker")
ARGS_ENV = "SLUICE_BENCH_VARIANT_ARGS"  # the app's arguments, for a granian worker process
CLIENTS = ("aiohttp", "httpx", "httpx2", "pool")

Post = Callable[[bytes], Awaitable[tuple[int, bytes]]]


async def _open_client(client: str, url: str) -> tuple[Post, Callable[[], Awaitable[None]]]:
    """One pooled client posting JSON bodies to ``url``: (post, close)."""
    headers = {"content-type": "application/json"}
    if client == "aiohttp":
        import aiohttp

        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=100, keepalive_timeout=30), headers=headers
        )

        async def post(body: bytes) -> tuple[int, bytes]:
            async with session.post(url, data=body) as resp:
                return resp.status, await resp.read()

        return post, session.close
    if client in ("httpx", "httpx2"):
        mod = __import__(client)
        limits = mod.Limits(max_connections=100, max_keepalive_connections=100, keepalive_expiry=30)
        http = mod.AsyncClient(limits=limits, headers=headers, timeout=30.0, trust_env=False)

        async def post(body: bytes) -> tuple[int, bytes]:
            resp = await http.post(url, content=body)
            return resp.status_code, resp.content

        return post, http.aclose
    if client == "pool":
        from urllib.parse import urlsplit

        from pipeline.proxy.forwarding.http_client import Pool

        parts = urlsplit(url)
        pool = Pool(f"{parts.scheme}://{parts.netloc}", 100, 10.0, 30.0, headers=headers)

        async def post(body: bytes) -> tuple[int, bytes]:
            async with await pool.request("POST", parts.path, body) as resp:
                return resp.status, await resp.read()

        async def close() -> None:
            pool.close()

        return post, close
    raise ValueError(f"unknown client {client!r}")


def forward_app(client: str, backend_url: str) -> Any:
    """A bare ASGI forwarder: the body goes to ``backend_url`` through ``client``; its answer comes back."""
    state: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    state["post"], state["close"] = await _open_client(client, backend_url)
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await state["close"]()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        if scope["path"] == "/healthz":
            status, body = 200, b"{}"
        else:
            status, body = await state["post"](b"".join(chunks))
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return app


def proxy_app(config_path: Path) -> Any:
    from app.config import load_config
    from pipeline.proxy.app import create_app

    return create_app(load_config(config_path).proxy_settings())


async def _serve_granian(app: Any, port: int, task_impl: str = "asyncio") -> None:
    import signal

    from granian.constants import HTTPModes, Interfaces, TaskImpl
    from granian.server.embed import Server

    server = Server(
        app,
        "127.0.0.1",
        port,
        interface=Interfaces.ASGI,
        http=HTTPModes.http1,
        log_access=False,
        task_impl=TaskImpl(task_impl),
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.stop)
    await server.serve()


def app_from_env() -> Any:
    """The app a granian worker process serves (``--server granian-worker``): arguments from the env."""
    args = json.loads(os.environ[ARGS_ENV])
    if args["app"] == "proxy":
        app = proxy_app(Path(args["config"]))
    else:
        app = forward_app(args["client"], args["backend"])
    settle_heap(gen0_threshold=10_000)
    return app


def serve_granian_worker(port: int) -> None:
    """Granian's own process mode (a supervisor and one worker process, uvloop), as its CLI runs."""
    from granian import Granian
    from granian.constants import HTTPModes, Interfaces, Loops

    Granian(
        "bench.server_variants:app_from_env",
        address="127.0.0.1",
        port=port,
        interface=Interfaces.ASGI,
        workers=1,
        loop=Loops.uvloop,
        http=HTTPModes.http1,
        log_access=False,
        factory=True,
    ).serve()


def serve(server: str, app: Any, port: int) -> None:
    """Serve ``app`` on 127.0.0.1:``port`` until SIGTERM/SIGINT."""
    if server.startswith("granian"):
        import uvloop

        uvloop.run(_serve_granian(app, port, "rust" if server == "granian-rusttask" else "asyncio"))
        return
    import uvicorn

    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        loop="uvloop" if server == "uvicorn" else "asyncio",
        http="httptools",
        lifespan="on",
        access_log=False,
        log_config=None,
        server_header=False,
    )
    with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
        runner.run(uvicorn.Server(config).serve())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", choices=SERVERS, required=True)
    ap.add_argument("--app", choices=("proxy", "forward"), required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--config", type=Path, help="The proxy's config (--app proxy).")
    ap.add_argument("--client", choices=CLIENTS, default="aiohttp", help="Upstream client (--app forward).")
    ap.add_argument("--backend", help="URL the forwarder posts to (--app forward).")
    args = ap.parse_args()
    if args.server == "granian-worker":
        os.environ[ARGS_ENV] = json.dumps(
            {"app": args.app, "config": str(args.config), "client": args.client, "backend": args.backend}
        )
        serve_granian_worker(args.port)
        return
    app = proxy_app(args.config) if args.app == "proxy" else forward_app(args.client, args.backend)
    settle_heap(gen0_threshold=10_000)  # as ``sluice proxy`` does once it is up
    serve(args.server, app, args.port)


if __name__ == "__main__":
    main()
