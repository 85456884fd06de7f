"""The running sink's endpoint is closed by default and refuses every cross-tenant probe, changing nothing."""

from __future__ import annotations

import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pyarrow as pa

from infra.broker import LocalBroker
from sinks.admin_key import admin_key_path
from testing.samples import make_trajectory
from tests.sinks.helpers import ACME_KEY, GLOBEX_KEY, REPO, SinkProcess, produce_trajectories, write_config


def _query(http: httpx.Client, sql: str, key: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return http.post("/query", json={"sql": sql}, headers=headers)


def _rows(resp: httpx.Response) -> list[dict]:
    assert resp.status_code == 200, resp.text
    return pa.ipc.open_stream(resp.content).read_all().to_pylist()


def test_closed_by_default_and_cross_tenant_probes_are_refused(broker: LocalBroker, tmp_path: Path) -> None:
    path, cfg = write_config(broker, tmp_path, assignment="manual")
    assert cfg.sink.admin_key is None
    produce_trajectories(
        cfg, [make_trajectory("acme~a0", tenant="acme"), make_trajectory("globex~g0", tenant="globex")]
    )
    sink = SinkProcess(path, cfg).wait_ready()
    try:
        key_file = admin_key_path(cfg)
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert str(key_file) in sink.output()  # its path is printed at first start, never the key
        admin = key_file.read_text().strip()
        assert admin not in sink.output()
        with httpx.Client(base_url=sink.url, timeout=30) as http:
            count = "SELECT count(*) AS n FROM trajectories"
            no_key = _query(http, count, None)
            assert no_key.status_code == 401 and no_key.json()["kind"] == "auth"
            assert _query(http, count, "sk-wrong").status_code == 401
            deadline = time.monotonic() + 30  # the sink writes its first batch after batch_max_wait_s
            while _rows(_query(http, count, admin)) != [{"n": 2}] and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _rows(_query(http, count, admin)) == [{"n": 2}]

            # globex probes acme's trajectory: the query sees nothing of it, erasure is refused
            probe = "SELECT * FROM trajectories WHERE trajectory_id = 'acme~a0'"
            assert _rows(_query(http, probe, GLOBEX_KEY)) == []
            auth = {"Authorization": f"Bearer {GLOBEX_KEY}"}
            other = http.post("/erase", json={"scope": "trajectory", "target": "acme~a0"}, headers=auth)
            assert other.status_code == 404 and other.json()["kind"] == "not_found", other.text
            tenant = http.post("/erase", json={"scope": "tenant", "target": "acme"}, headers=auth)
            assert tenant.status_code == 403 and tenant.json()["kind"] == "forbidden", tenant.text
            no_auth = http.post("/erase", json={"scope": "tenant", "target": "acme"})
            assert no_auth.status_code == 401
            assert _rows(_query(http, count, admin)) == [{"n": 2}]  # nothing changed
            assert _rows(_query(http, "SELECT count(*) AS n FROM erasures", admin)) == [{"n": 0}]

            # pathological nesting: a 400 in the endpoint's own format, on both endpoints
            for endpoint in ("/query", "/erase"):
                for body in (b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000):
                    resp = http.post(endpoint, content=body, headers={"Authorization": f"Bearer {admin}"})
                    assert resp.status_code == 400 and "nested deeper than" in resp.json()["error"], resp.text

        # the export command of a tenant holds nothing of another tenant's trajectory
        out = tmp_path / "probe.jsonl"
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", "export", "--query", probe, "--out", str(out)]
            + ["--api-key", GLOBEX_KEY, "--config", str(path)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert out.read_text() == "" and "wrote 0 rows" in done.stdout
        # a tenant's own erasure through the CLI prints its receipt
        mine = subprocess.run(
            [sys.executable, "-m", "app.cli", "erase", "--trajectory", "a0", "--api-key", ACME_KEY]
            + ["--config", str(path)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert mine.returncode == 0, mine.stderr
        assert "1 trajectories" in mine.stdout and "stages:" in mine.stdout and "to do:" in mine.stdout
    finally:
        assert sink.stop() == 0, sink.output()
