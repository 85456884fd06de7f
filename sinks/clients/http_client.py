"""Talk to a running sink over its loopback endpoint (queries stream back as Arrow IPC).

sluice query "SELECT count(*) FROM trajectories"   # while `sluice sink` runs
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from sinks.erasure_models import ErasureRequest, ErasureResult
from sinks.exceptions import ERROR_BY_KIND, QueryError, SinkError
from sinks.query_server import database_id
from sinks.settings import SinkSettings


def probe_sink(cfg: SinkSettings, timeout_s: float = 2.0) -> str | None:
    """URL of the sink serving this config's database, or None when nothing listens there."""
    sink = cfg.sink
    if not sink.query_port:
        return None
    url = f"http://{sink.query_host}:{sink.query_port}"
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=timeout_s) as resp:
            health = json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None
    want = database_id(cfg.path(sink.database))
    if health.get("database") != want:
        raise SinkError(f"{url} serves {health.get('database')}, not {want}: check sink.query_port")
    return url


class SinkHttpClient:
    def __init__(self, url: str, api_key: str | None, timeout_s: float = 300.0) -> None:
        self.url = url
        self.where = f"sink at {url}"
        self._api_key = api_key
        self._timeout = timeout_s

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        req = urllib.request.Request(self.url + path, json.dumps(body).encode(), headers, method="POST")
        try:
            return urllib.request.urlopen(req, timeout=self._timeout)
        except urllib.error.HTTPError as err:
            try:
                detail = json.loads(err.read())
            except ValueError:
                detail = {"error": f"HTTP {err.code}"}
            msg, kind = detail.get("error", f"HTTP {err.code}"), detail.get("kind")
            error = ERROR_BY_KIND.get(kind, QueryError) if isinstance(kind, str) else QueryError
            raise error(msg) from None
        except (urllib.error.URLError, OSError) as err:
            raise SinkError(f"sink at {self.url} did not answer: {err}") from None

    def query(self, sql: str) -> pa.RecordBatchReader:
        resp = self._post("/query", {"sql": sql})
        try:
            reader = pa.ipc.open_stream(resp)
        except pa.ArrowException as err:
            resp.close()
            raise QueryError(f"bad response from {self.url}: {err}") from None

        def batches() -> Iterator[pa.RecordBatch]:
            try:
                yield from reader
            except pa.ArrowException as err:
                raise QueryError(f"the result stream from {self.url} broke off: {err}") from None
            finally:
                resp.close()

        return pa.RecordBatchReader.from_batches(reader.schema, batches())

    def erase(self, request: ErasureRequest) -> ErasureResult:
        with self._post("/erase", request.model_dump(mode="json")) as resp:
            return ErasureResult.model_validate_json(resp.read())

    def close(self) -> None:
        pass
