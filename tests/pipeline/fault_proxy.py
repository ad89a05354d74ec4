"""A fault-injecting HTTP proxy on 127.0.0.1 in front of an S3 server (moto), for the fault campaign:
it passes requests through until told to fail some, then answers them with 500 InternalError, 503
ServiceUnavailable or 503 SlowDown, or resets the connection (mid-upload when the request has a body).

Faults are scheduled by request count (``fail(kind, count, after)``: the ``count`` requests after the
next ``after`` ones), so a seeded schedule is the same faults whatever the timing, or for a while
(``fail_for(kind, seconds)``). ``injected`` counts the faults served by kind, ``passed`` the rest.
"""

from __future__ import annotations

import http.client
import socket
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KINDS = ("500", "503", "slowdown", "reset")
_ERRORS = {
    "500": (500, "InternalError", "We encountered an internal error. Please try again."),
    "503": (503, "ServiceUnavailable", "Service is unable to handle request."),
    "slowdown": (503, "SlowDown", "Please reduce your request rate."),
}
_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade", "te", "trailer"}


class FaultProxy:
    """``with FaultProxy(upstream_port) as proxy:`` listens on ``proxy.port``."""

    def __init__(self, upstream_port: int):
        self.upstream = upstream_port
        self.injected: Counter = Counter()
        self.passed = 0
        self._lock = threading.Lock()
        self._plan: list[list] = []  # [kind, count left, requests to pass first]
        self._until: tuple[str, float] | None = None
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name="fault-proxy", daemon=True)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fail(self, kind: str, count: int, after: int = 0) -> None:
        """Fail ``count`` requests with ``kind``, once ``after`` more have passed."""
        assert kind in KINDS, kind
        with self._lock:
            self._plan.append([kind, count, after])

    def fail_for(self, kind: str, seconds: float) -> None:
        assert kind in KINDS, kind
        self._until = (kind, time.monotonic() + seconds)

    def clear(self) -> None:
        with self._lock:
            self._plan.clear()
            self._until = None

    def next_fault(self) -> str | None:
        with self._lock:
            if self._until and time.monotonic() < self._until[1]:
                self.injected[self._until[0]] += 1
                return self._until[0]
            if self._plan:
                step = self._plan[0]
                if step[2] > 0:
                    step[2] -= 1
                else:
                    step[1] -= 1
                    if step[1] <= 0:
                        self._plan.pop(0)
                    self.injected[step[0]] += 1
                    return step[0]
            self.passed += 1
            return None


def _handler(proxy: FaultProxy):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as S3 clients expect

        def log_message(self, *args) -> None:  # quiet
            pass

        def _body(self) -> bytes:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                data = b""
                while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                    data += self.rfile.read(size)
                    self.rfile.readline()
                while self.rfile.readline().strip():  # trailers
                    pass
                return data
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _reset(self) -> None:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True

        def _any(self) -> None:
            fault = proxy.next_fault()
            if fault == "reset":
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length // 2)  # the upload is cut halfway
                return self._reset()
            body = self._body()
            if fault:
                status, code, message = _ERRORS[fault]
                xml = f"<?xml version='1.0'?><Error><Code>{code}</Code><Message>{message}</Message></Error>".encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(xml)))
                self.end_headers()
                self.wfile.write(xml)
                return
            upstream = http.client.HTTPConnection("127.0.0.1", proxy.upstream, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP and k.lower() != "expect"}
            if body or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(body))
            upstream.request(self.command, self.path, body=body, headers=headers)
            reply = upstream.getresponse()
            data = reply.read()
            self.send_response_only(reply.status, reply.reason)
            for key, value in reply.getheaders():
                if key.lower() not in _HOP and key.lower() != "content-length":
                    self.send_header(key, value)
            head = self.command == "HEAD"
            self.send_header("Content-Length", reply.getheader("Content-Length", "0") if head else str(len(data)))
            self.end_headers()
            if not head:
                self.wfile.write(data)
            upstream.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

    return Handler
