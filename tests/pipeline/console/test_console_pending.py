"""The console in a real headless Chromium against a live proxy and a real DuckDB store: the sign-in
page says where the operator key is and what a tenant's key sees; a trajectory the proxy recorded but
the store does not have yet is listed as pending (to its tenant and to the operator, never to another
tenant), next to the landed ones; the status page shows counts as integers and policy servers as a
table."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from app.config import SluiceConfig
from app.status import collect
from infra.broker import LocalBroker, free_port
from pipeline.console.app import make_app
from pipeline.topics import create_topics
from sinks.admin_key import admin_key_path, ensure_admin_key
from tests.conftest import make_config
from tests.pipeline.proxy.conftest import KEY, KEY_GLOBEX, LiveProxy, proxy_section, serve
from tests.pipeline.proxy.conftest import echo_backend as echo_backend  # noqa: F401 - the fixture
from tests.pipeline.proxy.test_trajectory_reads import chat, land

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def proxy(broker: LocalBroker, tmp_path: Path, echo_backend: str) -> Iterator[LiveProxy]:  # noqa: F811
    cfg = make_config(
        broker,
        tmp_path,
        proxy=proxy_section(echo_backend, tmp_path),
        up={"local_model_backend": None},
        ui={"port": free_port()},
    )
    create_topics(cfg.broker, cfg.topics)
    with serve(cfg) as live:
        yield live


@pytest.fixture
def console_url(proxy: LiveProxy) -> Iterator[str]:
    """``sluice ui``'s app, served from a thread with its own event loop."""
    cfg: SluiceConfig = proxy.config
    app = make_app(cfg.ui, cfg.sink_settings(), lambda s: collect(cfg, s), proxy.url)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app, access_log=None)
    loop.run_until_complete(runner.setup())
    loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", cfg.ui.port).start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{cfg.ui.port}"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.run_until_complete(runner.cleanup())
        loop.close()


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: bash infra/install.sh installs it")
def test_sign_in_hint_and_pending_trajectories(proxy: LiveProxy, console_url: str) -> None:
    from playwright.sync_api import sync_playwright

    cfg = proxy.config
    chat(proxy, "job-9")  # recorded by the proxy, not in the store
    land(cfg, "acme~done-1", reward=1.0)  # in the store
    operator_key = ensure_admin_key(cfg.sink_settings())
    key_file = str(admin_key_path(cfg.sink_settings()))

    def pending_ids(page: object) -> list[str]:
        return page.eval_on_selector_all("#pending td.pending-id", "tds => tds.map(t => t.textContent)")  # type: ignore[attr-defined]

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.goto(console_url + "/trajectories")
            assert page.url.startswith(console_url + "/login")
            assert page.inner_text("#admin-key-file") == key_file
            assert "every tenant" in page.inner_text("#operator-hint")
            assert "that tenant's trajectories only" in page.inner_text("#tenant-hint")

            page.fill("#api_key", KEY)
            page.click("#sign-in")
            page.wait_for_selector("#pending")
            assert pending_ids(page) == ["acme~job-9"]
            assert page.inner_text("#pending tbody tr[data-state=pending] .pill") == "pending"
            landed = page.eval_on_selector_all("#trajectories a.tid", "as => as.map(a => a.textContent)")
            assert landed == ["acme~done-1"]
            page.click("form.logout button")

            page.goto(console_url + "/login")
            page.fill("#api_key", KEY_GLOBEX)
            page.click("#sign-in")
            page.wait_for_selector("#pending")
            assert pending_ids(page) == []  # acme's pending trajectory is not globex's to see
            page.click("form.logout button")

            page.goto(console_url + "/login")
            page.fill("#api_key", operator_key)
            page.click("#sign-in")
            page.wait_for_selector("#pending")
            assert page.inner_text("#who") == "operator"
            assert pending_ids(page) == ["acme~job-9"]

            page.goto(console_url + "/status")
            page.wait_for_selector("#services")
            spool = page.inner_text("#spool")
            assert spool.isdigit(), spool  # a count, not "0.0"
            assert page.locator("#policy-servers tbody tr").count() >= 1  # a table, not a dict
        finally:
            browser.close()
