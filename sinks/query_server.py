"""The sink's loopback HTTP endpoint: queries, erasures and metrics while the sink holds the database.

DuckDB admits one writing process, so while the sink runs, ``sluice query``/``export``/``erase`` talk to
it here instead of opening the file. Each query runs on its own cursor of the sink's connection (MVCC:
readers see committed batches and never block the writer) and streams back as Arrow IPC. Erasures are
handed to the ingest loop, which runs them between batches (the single writer) and answers when done.

    GET  /healthz   {"status": "ok", "database": ..., "assigned_partitions": n}
    GET  /metrics   Prometheus text
    POST /query     {"sql": "..."}  (Authorization: Bearer KEY)  -> application/vnd.apache.arrow.stream
    POST /erase     {"scope": "subject", "target": "..."}         -> the erasure receipt (JSON)

Closed by default: a request without a key is a 401 (``sinks.principal``); a tenant's key asking
outside its tenant is a 403 (another tenant) or 404 (a trajectory it does not own), and changes nothing.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from pydantic import ValidationError

from sinks.erasure_models import ErasureRequest, ErasureResult
from sinks.exceptions import AccessDenied, AuthError, ErasureError, NotFound, QueryError, QueryRejected
from sinks.metrics import SinkMetrics
from sinks.principal import Principal, resolve_principal
from sinks.scoped_query import run_query
from sinks.settings import SinkSettings
from sluice.json_limits import MAX_JSON_DEPTH, JsonTooDeep, loads_bounded

log = logging.getLogger(__name__)

ARROW_STREAM = "application/vnd.apache.arrow.stream"
MAX_BODY = 1 << 20


class QueryService:
    """What the HTTP handler needs from the sink."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        cfg: SinkSettings,
        metrics: SinkMetrics,
        submit_erasure: Callable[[ErasureRequest, Principal], ErasureResult],
        health: Callable[[], dict[str, Any]],
    ) -> None:
        self._root = con.cursor()  # made on the owner's thread; cursors for requests come from it
        self._catalog = con.execute("SELECT current_database()").fetchone()[0]
        self._lock = threading.Lock()
        self.cfg = cfg
        self.metrics = metrics
        self.submit_erasure = submit_erasure
        self.health = health

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A new connection to the same database for one request (thread-safe), defaulting to the
        owner's catalog (a cursor starts in DuckDB's in-memory one)."""
        with self._lock:
            cur = self._root.cursor()
        cur.execute(f'USE "{self._catalog}"').fetchall()
        return cur

    def close(self) -> None:
        self._root.close()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one response per connection; an Arrow stream ends at EOF

    def log_message(self, fmt: str, *args: Any) -> None:  # request lines only, never headers
        log.debug("%s " + fmt, self.client_address[0], *args)

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, default=str).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _principal(self) -> Principal:
        auth = self.headers.get("Authorization", "")
        key = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        return resolve_principal(self.server.service.cfg, key)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise QueryRejected(f"request body over {MAX_BODY} bytes")
        try:
            body = loads_bounded((self.rfile.read(length) or b"{}").decode("utf-8"), MAX_JSON_DEPTH)
        except JsonTooDeep:
            raise QueryRejected(
                f"request body is nested deeper than {MAX_JSON_DEPTH} levels of arrays/objects"
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise QueryRejected(f"request body is not JSON: {err}") from None
        if not isinstance(body, dict):
            raise QueryRejected("request body must be a JSON object")
        return body

    def do_GET(self) -> None:
        svc = self.server.service
        if self.path == "/healthz":
            self._json(200, {"status": "ok", **svc.health()})
        elif self.path == "/metrics":
            data = svc.metrics.render()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self._json(404, {"error": f"no such endpoint: {self.path}"})

    _streaming = False

    def do_POST(self) -> None:
        try:
            if self.path == "/query":
                self._query()
            elif self.path == "/erase":
                self._erase()
            else:
                self._json(404, {"error": f"no such endpoint: {self.path}"})
        except AuthError as err:
            self._json(401, {"error": str(err), "kind": "auth"})
        except AccessDenied as err:
            self._json(403, {"error": str(err), "kind": "forbidden"})
        except NotFound as err:
            self._json(404, {"error": str(err), "kind": "not_found"})
        except QueryRejected as err:
            self.server.service.metrics.queries.labels("rejected").inc()
            self._json(400, {"error": str(err), "kind": "rejected"})
        except QueryError as err:
            self.server.service.metrics.queries.labels("error").inc()
            self._json(400, {"error": str(err), "kind": "error"})
        except ErasureError as err:
            self._json(500, {"error": str(err), "kind": "erasure"})
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as err:  # never a traceback to the client; the log has it
            log.exception("%s failed", self.path)
            if not self._streaming:
                self._json(500, {"error": f"internal error: {err}", "kind": "error"})

    def _query(self) -> None:
        svc = self.server.service
        principal = self._principal()
        sql = self._body().get("sql")
        if not isinstance(sql, str):
            raise QueryRejected('body needs "sql": a string')
        stream = run_query(svc.cursor(), sql, principal)
        try:
            self.send_response(200)
            self.send_header("Content-Type", ARROW_STREAM)
            self.end_headers()
            self._streaming = True
            rows = 0
            with pa.ipc.new_stream(self.wfile, stream.schema) as writer:
                for batch in stream.reader:
                    writer.write_batch(batch)
                    rows += batch.num_rows
            svc.metrics.queries.labels("ok").inc()
            log.debug("query by %s: %d rows", principal.describe(), rows)
        finally:
            stream.close()

    def _erase(self) -> None:
        svc = self.server.service
        principal = self._principal()
        try:
            req = ErasureRequest.model_validate(self._body())
        except ValidationError as err:
            raise QueryRejected(f"invalid erasure request: {err.errors(include_input=False)}") from None
        result = svc.submit_erasure(req, principal)
        self._json(200, result.model_dump(mode="json"))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], service: QueryService) -> None:
        self.service = service
        super().__init__(addr, _Handler)


class QueryServer:
    """Serve ``service`` on host:port in a background thread."""

    def __init__(self, service: QueryService, host: str, port: int) -> None:
        self.service = service
        self._server = _Server((host, port), service)
        self._thread = threading.Thread(target=self._server.serve_forever, name="sink-query", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> QueryServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.service.close()


def database_id(path: Path) -> str:
    """How a client recognises that an endpoint serves the database it means."""
    return str(path.resolve())
