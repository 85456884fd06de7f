"""A real OTLP/HTTP traces receiver for tests: decodes ``ExportTraceServiceRequest`` protobufs (the
opentelemetry-proto definitions), keeps every span, answers ``ExportTraceServiceResponse``."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def any_value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return None if kind is None else getattr(v, kind)


class OtlpReceiver:
    """``with OtlpReceiver() as rx:`` serves ``rx.endpoint`` (…/v1/traces); ``rx.spans`` fills up."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.requests = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces" or "protobuf" not in self.headers.get("Content-Type", ""):
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver._take(ExportTraceServiceRequest.FromString(body))
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _take(self, req: ExportTraceServiceRequest) -> None:
        with self._lock:
            self.requests += 1
            for rs in req.resource_spans:
                resource = {kv.key: any_value(kv.value) for kv in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(
                            {
                                "name": s.name,
                                "trace_id": s.trace_id.hex(),
                                "span_id": s.span_id.hex(),
                                "parent_span_id": s.parent_span_id.hex(),
                                "kind": s.kind,
                                "attributes": {kv.key: any_value(kv.value) for kv in s.attributes},
                                "events": [
                                    {
                                        "name": e.name,
                                        "attributes": {kv.key: any_value(kv.value) for kv in e.attributes},
                                    }
                                    for e in s.events
                                ],
                                "links": [link.span_id.hex() for link in s.links],
                                "resource": resource,
                                "scope": ss.scope.name,
                            }
                        )

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.spans)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
