"""The per-tenant policy view in a real headless Chromium over a real DuckDB store: the operator sees every
tenant's served version (own, shared or default), its lineage share and reward by version, and follows a
version to what trained it; a tenant's key sees its own row and its own lineage rows only."""

from __future__ import annotations

import pytest

from sinks.admin_key import ensure_admin_key
from tests.pipeline.console.test_console_pending import CHROMIUM, console_url, proxy  # noqa: F401 - fixtures
from tests.pipeline.proxy.conftest import KEY, LiveProxy
from tests.pipeline.proxy.conftest import echo_backend as echo_backend  # noqa: F401 - the fixture
from tests.sinks.test_tenant_policies import build_store


def _cells(page: object, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, "els => els.map(e => e.textContent.trim())")  # type: ignore[attr-defined]


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: bash infra/install.sh installs it")
def test_policies_page_per_tenant_and_lineage(proxy: LiveProxy, console_url: str) -> None:  # noqa: F811
    from playwright.sync_api import sync_playwright

    cfg = proxy.config
    build_store(cfg.path(cfg.sink.database))
    operator_key = ensure_admin_key(cfg.sink_settings())
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.goto(console_url + "/login?next=/policies")
            page.fill("#api_key", operator_key)
            page.click("#sign-in")
            page.wait_for_selector("#tenant-policies")
            assert _cells(page, "#tenant-policies tbody tr td:first-child") == ["acme", "globex", "initech"]
            assert _cells(page, "#tenant-policies td.served") == ["acme.1", "globex.1", "1"]
            assert _cells(page, "#tenant-policies td.served-by") == ["own", "own", "shared"]
            means = {
                (r["t"], r["v"]): r["m"]
                for r in page.eval_on_selector_all(
                    "#policy-rewards tbody tr",
                    "rs => rs.map(r => ({t: r.dataset.tenant, v: r.dataset.version,"
                    " m: r.querySelector('td.mean').textContent}))",
                )
            }
            assert means[("acme", "0")] == "0.200" and means[("acme", "acme.1")] == "0.900"
            page.click("#tenant-policies tr[data-tenant=acme] a.lineage")
            page.wait_for_selector("#lineage")
            assert _cells(page, "#lineage a.tid") == ["acme~t0", "acme~t1"]
            page.click("form.logout button")

            page.goto(console_url + "/login?next=/policies")
            page.fill("#api_key", KEY)  # acme's key
            page.click("#sign-in")
            page.wait_for_selector("#tenant-policies")
            assert _cells(page, "#tenant-policies tbody tr td:first-child") == ["acme"]
            assert set(_cells(page, "#policy-rewards td:first-child")) == {"acme"}
            page.goto(console_url + "/policies/1")  # the shared version: none of acme's data trained it
            assert "not found" in page.inner_text("main").lower()
            page.goto(console_url + "/policies/globex.1")
            assert "not found" in page.inner_text("main").lower()
        finally:
            browser.close()
