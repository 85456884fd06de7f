"""Through the real components: agent traffic through the proxy, stage workers and sink; the OTLP
exporter sends each audited trajectory to a real OTLP/HTTP receiver, and a second exporter to Arize
Phoenix, which the test reads back through Phoenix's own API; `sluice status` judges every
service; `sluice ui` in a real headless Chromium (Playwright driving the system browser): sign in with a
tenant's key, filter, open a trajectory, see its redactions and versions, and nothing of another tenant.
Screenshots go to ``var/test-artifacts/console/``."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from app.config import load_config
from app.status import collect, render
from app.up import running_stack
from infra.broker import free_port
from pipeline.demo.personas import canaries
from pipeline.demo.summary import id_list
from pipeline.evolve.publish import EvolutionPublisher
from pipeline.otel_export.spans import trace_id
from sluice.evolution import LedgerEntry, MemoryEntry, Overlay
from tests.otlp_receiver import OtlpReceiver
from tests.phoenix_server import PHOENIX_BIN, PhoenixServer
from tests.system.conftest import Stack, stack_config

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[2] / "var" / "test-artifacts" / "console"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as rx:
        yield rx


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixServer | None]:
    """Phoenix, started before the stack so that both come up together (None where not installed)."""
    if not PHOENIX_BIN.exists():
        yield None
        return
    server = PhoenixServer(tmp_path_factory.mktemp("phoenix")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, receiver: OtlpReceiver, phoenix: PhoenixServer | None
) -> Iterator[Stack]:
    """The embedded default (two stage workers, no stage web port) with the OTLP exporter on."""
    tmp = tmp_path_factory.mktemp("console-stack")
    path = stack_config(tmp)
    data = yaml.safe_load(path.read_text())
    data["otel"] = {"enabled": True, "endpoint": receiver.endpoint, "batch_max": 50}
    data["ui"] = {"port": free_port(), "status_refresh_s": 2}
    assert data["stages"].get("web_port") is None
    path.write_text(yaml.safe_dump(data))
    cfg = load_config(path)
    log = io.StringIO()
    with running_stack(cfg, path, log_path=tmp / "logs" / "up.log", sink=log) as sup:
        yield Stack(cfg, path, sup, log)


@pytest.fixture(scope="module")
def landed(stack: Stack) -> dict:
    """Eight trajectories over three tenants, landed with their late-reward versions."""
    report = stack.send(8, seed=16)
    assert report.calls_failed == []
    stack.wait_complete(report)
    ids = [sc.trajectory_id for sc in report.scenarios]
    late = [sc.trajectory_id for sc in report.scenarios if sc.reward == "late"]
    if late:
        stack.wait(
            lambda: all(r["version"] >= 2 for r in stack.query(
                f"SELECT version FROM trajectories WHERE trajectory_id IN ({id_list(late)})")),
            "late-reward versions",
        )  # fmt: skip
    return {"report": report, "ids": ids, "tenants": {sc.trajectory_id: sc.tenant for sc in report.scenarios}}


def test_status_shows_every_service_up_without_metrics_ports(stack: Stack, landed: dict) -> None:
    status = collect(stack.cfg, interval_s=1.0)
    services = status.services
    workers = stack.stage_workers()
    assert len(workers) == 2
    for name in ("broker", "model", "proxy", *workers, "sink", "otel-export"):
        assert name in services, services
        assert services[name]["state"] in ("up", "lagging"), (name, services[name])
    assert all(services[w]["pid"] == stack.sup.pid(w) for w in workers)
    assert isinstance(status.stages, dict) and status.stages["workers"] == 2
    text = render(status)
    rows = [line.split() for line in text.splitlines()]
    assert ["stages", "down"] not in rows and any(r[:2] == [workers[0], "up"] for r in rows), text


def test_otlp_receiver_reads_back_each_trajectory_as_genai_spans(
    receiver: OtlpReceiver, landed: dict
) -> None:
    ids, tenants = landed["ids"], landed["tenants"]

    def roots() -> dict[str, dict]:
        return {
            s["attributes"]["sluice.trajectory.id"]: s
            for s in receiver.snapshot()
            if s["name"] == "invoke_agent" and s["attributes"].get("sluice.trajectory.id") in ids
        }

    deadline = time.monotonic() + 60
    while len(roots()) < len(ids) and time.monotonic() < deadline:
        time.sleep(0.5)
    got = roots()
    assert set(got) == set(ids)
    spans = receiver.snapshot()
    for tid in ids:
        root = got[tid]
        assert root["trace_id"] == f"{trace_id(tid):032x}" and root["parent_span_id"] == ""
        assert root["attributes"]["sluice.tenant"] == tenants[tid]
        assert root["attributes"]["sluice.eligibility.decision"] in ("train", "audit_only")
        assert root["attributes"]["sluice.eligibility.reasons"]
        assert root["attributes"]["sluice.replay.grade"]
        assert root["resource"]["service.name"] == "sluice"
        chats = [s for s in spans if s["trace_id"] == root["trace_id"] and s["name"].startswith("chat ")]
        assert chats and all(s["parent_span_id"] == root["span_id"] for s in chats)
        for s in chats:
            a = s["attributes"]
            assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == "sluice-tiny"
            assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
            assert a["gen_ai.response.finish_reasons"] and "gen_ai.finish.reasons" not in a
            assert a["gen_ai.conversation.id"] == root["attributes"]["gen_ai.conversation.id"]
            assert a["sluice.policy.version"]
        versions = [
            s for s in spans if s["trace_id"] == root["trace_id"] and s["name"].startswith("sluice.version")
        ]
        assert versions
    tools = [s for s in spans if s["name"].startswith("execute_tool ")]
    assert tools and all(
        s["attributes"]["gen_ai.tool.name"] and s["attributes"]["gen_ai.tool.call.id"] for s in tools
    )
    evaluations = [e for s in spans for e in s["events"] if e["name"] == "gen_ai.evaluation.result"]
    assert evaluations and all("gen_ai.evaluation.score.value" in e["attributes"] for e in evaluations)
    blob = json.dumps(spans)
    assert "<EMAIL_ADDRESS_" in blob or "<PHONE_NUMBER_" in blob  # redacted content, placeholders kept
    leaked = [c for c in canaries() if c in blob]
    assert leaked == [], leaked  # never the raw traffic
    assert "sk-sluice-" not in blob  # nor an API key


def test_phoenix_reads_back_each_trajectory(
    stack: Stack, landed: dict, phoenix: PhoenixServer | None
) -> None:
    """A second exporter, in its own consumer group, sends the same audited trajectories to Phoenix."""
    if phoenix is None:
        pytest.skip("no Phoenix: bash infra/install.sh installs it in var/phoenix")
    phoenix.wait_ready()
    data = yaml.safe_load(stack.path.read_text())
    data["otel"] = {"enabled": True, "endpoint": phoenix.endpoint, "group_id": "sluice-otel-phoenix"}
    path = stack.path.with_name("phoenix.yaml")
    path.write_text(yaml.safe_dump(data))
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "otel-export", "--config", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ids, tenants = landed["ids"], landed["tenants"]
    try:
        deadline = time.monotonic() + 120
        while True:
            spans = phoenix.spans()
            roots = {
                s["attributes"]["sluice.trajectory.id"]: s
                for s in spans
                if s["name"] == "invoke_agent" and s["attributes"].get("sluice.trajectory.id") in ids
            }
            if set(roots) == set(ids) or time.monotonic() > deadline:
                break
            time.sleep(1)
    finally:
        proc.terminate()
        proc.wait(15)
    assert set(roots) == set(ids)
    for tid, root in roots.items():
        assert root["context"]["trace_id"] == f"{trace_id(tid):032x}" and root["parent_id"] is None
        assert root["attributes"]["sluice.tenant"] == tenants[tid]
        assert root["attributes"]["sluice.eligibility.decision"] in ("train", "audit_only")
        chats = [
            s for s in spans
            if s["context"]["trace_id"] == root["context"]["trace_id"] and s["name"].startswith("chat ")
        ]  # fmt: skip
        assert chats and all(s["parent_id"] == root["context"]["span_id"] for s in chats)
        for s in chats:
            a = s["attributes"]
            assert a["gen_ai.request.model"] == "sluice-tiny" and a["gen_ai.usage.input_tokens"] > 0
            assert a["gen_ai.response.finish_reasons"]
            assert a["gen_ai.conversation.id"] == root["attributes"]["gen_ai.conversation.id"]
    evaluations = [e for s in spans for e in s["events"] if e["name"] == "gen_ai.evaluation.result"]
    assert evaluations
    blob = json.dumps(spans)
    assert [c for c in canaries() if c in blob] == [] and "sk-sluice-" not in blob


@pytest.fixture(scope="module")
def ledger(stack: Stack) -> dict[str, list[LedgerEntry]]:
    """Two tenants' proposals with their gates and decisions, published on the ledger topic and landed."""
    out: dict[str, list[LedgerEntry]] = {}
    with EvolutionPublisher(stack.cfg.broker, stack.cfg.topics) as pub:
        for tenant, fact in (
            ("acme", "Refunds are accepted within 45 days."),
            ("globex", "Support is 24/7."),
        ):
            overlay = Overlay(tenant=tenant, memory=[MemoryEntry(text=fact)])
            pid = f"pr-console-{tenant}"
            common = {
                "proposal_id": pid,
                "surface": "memory",
                "tenant": tenant,
                "overlay_id": overlay.overlay_id,
            }
            entries = [
                LedgerEntry(kind="proposal", summary=f"add a memory entry: {fact}", diff={"candidate": overlay.model_dump(mode="json")},
                            evidence={"cluster": {"failures": 9, "trajectories": 12}}, **common),
                LedgerEntry(kind="gate", gate="shadow", passed=True, summary="candidate 0.83 vs control 0.17", **common),
                LedgerEntry(kind="gate", gate="offline", passed=False, summary="a safety probe regressed", **common),
                LedgerEntry(kind="decision", decision="abort", summary="stopped at the offline gate", **common),
            ]  # fmt: skip
            for entry in entries:
                pub.record(entry)
            out[tenant] = entries
    ids = id_list([e.entry_id for es in out.values() for e in es])
    stack.wait(
        lambda: (
            stack.query(f"SELECT count(*) AS n FROM evolution_ledger WHERE entry_id IN ({ids})")[0]["n"] == 8
        ),
        "ledger entries in DuckDB",
    )
    return out


@pytest.fixture(scope="module")
def console_url(stack: Stack) -> Iterator[str]:
    port = stack.cfg.ui.port
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "ui", "--config", str(stack.path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(url + "/healthz", timeout=1)
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(15)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: bash infra/install.sh installs it")
def test_console_in_chromium(
    stack: Stack, landed: dict, ledger: dict[str, list[LedgerEntry]], console_url: str
) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    keys = {tenant: key for key, tenant in stack.keys.items()}
    tenants = landed["tenants"]
    acme_ids = {t for t, tenant in tenants.items() if tenant == "acme"}
    other = next(t for t, tenant in tenants.items() if tenant != "acme")
    assert acme_ids
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1360, "height": 900})
            page.goto(console_url + "/trajectories")
            assert page.url.startswith(console_url + "/login")
            page.fill("#api_key", "sk-not-a-key")
            page.click("#sign-in")
            assert "unknown API key" in page.inner_text("#login-error")
            page.fill("#api_key", keys["acme"])
            page.click("#sign-in")
            page.wait_for_selector("#trajectories")
            assert page.inner_text("#who") == "tenant:acme"
            shown = page.eval_on_selector_all(
                "#trajectories tbody tr[data-tenant]", "rs => rs.map(r => r.dataset.tenant)"
            )
            assert shown and set(shown) == {"acme"}  # a tenant's key sees only its tenant
            listed = set(page.eval_on_selector_all("#trajectories a.tid", "as => as.map(a => a.textContent)"))
            assert acme_ids <= listed and other not in listed
            assert page.eval_on_selector_all("#f-tenant option", "os => os.map(o => o.value)") == ["", "acme"]
            page.screenshot(path=str(ARTIFACTS / "trajectories.png"), full_page=True)

            # filter: choosing a value submits the form (the console's JS)
            with page.expect_navigation():
                page.select_option("#f-eligibility", "train")
            assert "eligibility=train" in page.url
            eligibility = page.eval_on_selector_all(
                "#trajectories tbody tr[data-eligibility]", "rs => rs.map(r => r.dataset.eligibility)"
            )
            assert eligibility and set(eligibility) == {"train"}

            # open the acme trajectory with the most versions and redactions
            [best] = stack.query(
                "SELECT t.trajectory_id, t.versions, list(DISTINCT s.model_version) AS served "
                "FROM trajectories t JOIN steps s USING (trajectory_id) "
                f"WHERE t.trajectory_id IN ({id_list(sorted(acme_ids))}) AND t.eligibility = 'train' "
                "GROUP BY ALL ORDER BY t.versions DESC, sum(s.entity_count) DESC LIMIT 1"
            )
            with page.expect_navigation():
                page.click(f'a.tid:text-is("{best["trajectory_id"]}")')
            assert page.inner_text("#tid") == best["trajectory_id"]
            marks = page.eval_on_selector_all("mark.redacted", "ms => ms.map(m => m.textContent)")
            assert marks and all(m.startswith("<") or "*" in m for m in marks), marks
            assert page.locator("#versions tbody tr").count() == best["versions"]
            assert f"v{best['versions']} of {best['versions']}" == page.inner_text("#latest-version")
            served = set(
                page.eval_on_selector_all("article.step .policy", "bs => bs.map(b => b.textContent)")
            )
            assert served == {v for v in best["served"] if v}
            assert page.inner_text("#eligibility-reasons")
            body = page.content()
            assert not [c for c in canaries() if c in body]
            page.screenshot(path=str(ARTIFACTS / "trajectory.png"), full_page=True)

            # another tenant's trajectory reads as not found
            resp = page.goto(f"{console_url}/trajectories/{other}")
            assert resp is not None and resp.status == 404

            # live status: every service with its state
            page.goto(console_url + "/status")
            page.wait_for_selector("#services")
            states = dict(
                page.eval_on_selector_all(
                    "#services tbody tr",
                    "rs => rs.map(r => [r.dataset.service, r.querySelector('.state').textContent])",
                )
            )
            assert all(states[w] in ("up", "lagging") for w in stack.stage_workers()), states
            page.wait_for_timeout(2500)  # one in-place refresh by the page's script
            assert page.locator("#services tbody tr").count() == len(states)
            page.screenshot(path=str(ARTIFACTS / "status.png"), full_page=True)

            page.goto(console_url + "/learning")
            assert page.locator("#learning tbody tr").count() >= 1
            page.screenshot(path=str(ARTIFACTS / "learning.png"), full_page=True)

            # the evolution ledger: the tenant's proposals only, then one proposal's entries in order
            page.goto(console_url + "/evolution")
            tenants_shown = page.eval_on_selector_all(
                "#proposals tbody tr[data-tenant]", "rs => rs.map(r => r.dataset.tenant)"
            )
            assert tenants_shown == ["acme"], tenants_shown
            assert page.inner_text("#proposals .decision") == "abort"
            with page.expect_navigation():
                page.click("a.pid")
            assert page.inner_text("#pid") == "pr-console-acme"
            kinds = page.eval_on_selector_all("#ledger li.entry", "ls => ls.map(l => l.dataset.kind)")
            assert kinds == [e.kind for e in ledger["acme"]]
            assert "Refunds are accepted within 45 days." in page.inner_text("#ledger")
            page.screenshot(path=str(ARTIFACTS / "evolution.png"), full_page=True)
            resp = page.goto(f"{console_url}/evolution/pr-console-globex")
            assert resp is not None and resp.status == 404
        finally:
            browser.close()

    # a script's bearer key is scoped the same way
    req = urllib.request.Request(
        console_url + "/trajectories", headers={"Authorization": f"Bearer {keys['globex']}"}
    )
    html = urllib.request.urlopen(req, timeout=30).read().decode()
    assert 'data-tenant="globex"' in html and 'data-tenant="acme"' not in html
