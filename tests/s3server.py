"""Test helpers for S3: a moto server process and a counting, fault-injecting HTTP proxy.

Both listen on 127.0.0.1 only. The proxy forwards each request to moto over a keep-alive
http.client connection per proxy thread, counts it by kind (LIST, HEAD, RANGE, GET, PUT, ...)
and can answer a share of requests with 503, reset the connection without answering, delay, or
send half of a GET's body and then reset the connection ("midbody") or close it ("truncate").
"""

from __future__ import annotations

import http.client
import os
import random
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

__all__ = ["MotoServer", "S3Proxy", "free_port", "kind_of"]

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "expect"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoServer:
    """``python -m moto.server`` on a free 127.0.0.1 port, stopped by :meth:`stop`."""

    def __init__(self, log_path: str | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = open(log_path, "wb") if log_path else subprocess.DEVNULL  # noqa: SIM115
        env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Poll with short HTTP requests until moto answers (bounded)."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto server exited with {self.proc.returncode}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                conn.request("GET", "/moto-api/")
                status = conn.getresponse().status
                conn.close()
                if status < 500:
                    return
            except OSError as exc:
                last = exc
            threading.Event().wait(0.05)  # poll interval
        self.stop()
        raise RuntimeError(f"moto server on port {self.port} did not answer in {timeout} s: {last}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self._log is not subprocess.DEVNULL:
            self._log.close()


def kind_of(method: str, path: str, headers) -> str:
    """LIST = GET with list-type=2, RANGE = GET with a Range header, else the method."""
    if method == "GET":
        if "list-type" in parse_qs(urlsplit(path).query):
            return "LIST"
        if headers.get("Range"):
            return "RANGE"
    return method


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server: _ProxyServer

    def log_message(self, *args):  # quiet
        pass

    def setup(self):
        super().setup()
        with self.server.proxy._lock:
            self.server.proxy._connections.add(self.connection)

    def finish(self):
        with self.server.proxy._lock:
            self.server.proxy._connections.discard(self.connection)
        super().finish()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _handle(self) -> None:
        proxy = self.server.proxy
        with proxy._lock:
            proxy.in_flight += 1
            proxy.max_in_flight = max(proxy.max_in_flight, proxy.in_flight)
        try:
            self._serve(proxy)
        finally:
            with proxy._lock:
                proxy.in_flight -= 1

    def _serve(self, proxy) -> None:
        body = self._body()
        kind = kind_of(self.command, self.path, self.headers)
        fault = proxy._record(
            kind, self.headers.get("amz-sdk-request", ""), (self.command, self.path, self.headers.get("Range", ""))
        )
        if fault == "reset":
            # close without answering; SO_LINGER 0 makes it a TCP reset
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if fault == "503":
            msg = b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>ServiceUnavailable</Code><Message>injected</Message></Error>"
            self.send_response(503)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(msg)
            return
        if fault in ("midbody", "truncate"):
            fwd = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            status, reason, rheaders, rbody = proxy._forward(self.command, self.path, body, fwd)
            self.send_response_only(status, reason)
            for k, v in rheaders:
                if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(rbody)))  # promises the whole body ...
            self.end_headers()
            self.wfile.write(rbody[: len(rbody) // 2])  # ... and sends half of it
            self.wfile.flush()
            if fault == "midbody":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if fault == "slow":
            threading.Event().wait(proxy.delay_s)  # injected latency, bounded
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        if body or self.command in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        status, reason, rheaders, rbody = proxy._forward(self.command, self.path, body, headers)
        self.send_response_only(status, reason)
        for k, v in rheaders:
            if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                self.send_header(k, v)
        if self.command == "HEAD":
            self.send_header("Content-Length", dict((k.lower(), v) for k, v in rheaders).get("content-length", "0"))
        else:
            self.send_header("Content-Length", str(len(rbody)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(rbody)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # socketserver's 5 drops SYNs of a concurrent burst (1 s retransmit)
    proxy: S3Proxy


class S3Proxy:
    """A counting, fault-injecting HTTP proxy to ``target`` (an http://host:port URL)."""

    def __init__(self, target: str, seed: int = 0):
        parts = urlsplit(target)
        self.target = (parts.hostname, parts.port)
        self.counts: Counter = Counter()
        self.faults: Counter = Counter()
        self.in_flight = self.max_in_flight = 0  # requests being answered now / at most so far
        self.error_rate = self.reset_rate = self.slow_rate = self.midbody_rate = self.truncate_rate = 0.0
        self.max_faults_per_request: int | None = None
        self._faulted: Counter = Counter()
        self._connections: set = set()  # client connections open now (closed by close())
        self.delay_s = 0.0
        self.fault_attempts = 3
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._local = threading.local()
        self._server = _ProxyServer(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="s3proxy", daemon=True)
        self._thread.start()

    def configure(
        self,
        error_rate=0.0,
        reset_rate=0.0,
        slow_rate=0.0,
        delay_s=0.0,
        seed=0,
        fault_attempts=3,
        midbody_rate=0.0,
        truncate_rate=0.0,
        max_faults_per_request=None,
    ) -> None:
        """Shares of requests answered 503 / reset / delayed by ``delay_s`` (at most 2 s), and of
        GETs whose body breaks off half way with a reset (midbody) or a clean close (truncate).

        Only a request's first ``fault_attempts`` attempts (botocore's ``amz-sdk-request:
        attempt=N`` header) are faulted, so a client that retries enough always gets through;
        ``max_faults_per_request`` bounds the faults of one (method, path, Range) over all its
        attempts, even those a client starts afresh.
        """
        with self._lock:
            self.error_rate, self.reset_rate, self.slow_rate = error_rate, reset_rate, slow_rate
            self.midbody_rate, self.truncate_rate = midbody_rate, truncate_rate
            self.max_faults_per_request = max_faults_per_request
            self._faulted.clear()
            self.fault_attempts = fault_attempts
            self.delay_s = min(delay_s, 2.0)
            self._rng = random.Random(seed)

    def reset(self) -> None:
        self.configure()
        with self._lock:
            self.counts.clear()
            self.faults.clear()
            self.max_in_flight = self.in_flight

    def snapshot(self) -> dict:
        with self._lock:
            return dict(self.counts)

    def _record(self, kind: str, sdk_request: str, request: tuple = ()) -> str | None:
        m = re.search(r"attempt=(\d+)", sdk_request)
        attempt = int(m.group(1)) if m else 1
        with self._lock:
            self.counts[kind] += 1
            r = self._rng.random()
            fault = None
            body_faults = self.midbody_rate + self.truncate_rate if kind in ("GET", "RANGE") else 0.0
            if attempt > self.fault_attempts:
                pass
            elif self.max_faults_per_request is not None and self._faulted[request] >= self.max_faults_per_request:
                pass
            elif r < self.error_rate:
                fault = "503"
            elif r < self.error_rate + self.reset_rate:
                fault = "reset"
            elif r < self.error_rate + self.reset_rate + self.slow_rate:
                fault = "slow"
            elif r < self.error_rate + self.reset_rate + self.slow_rate + body_faults:
                fault = (
                    "midbody"
                    if r < self.error_rate + self.reset_rate + self.slow_rate + self.midbody_rate
                    else "truncate"
                )
            if fault:
                self.faults[fault] += 1
                self._faulted[request] += 1
            return fault

    def _forward(self, method, path, body, headers):
        for attempt in range(2):  # a kept-alive connection moto closed meanwhile is opened again
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = http.client.HTTPConnection(*self.target, timeout=30)
            try:
                conn.request(method, path, body=body if body or method in ("PUT", "POST") else None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                if resp.will_close:
                    conn.close()
                    self._local.conn = None
                return resp.status, resp.reason, resp.getheaders(), data
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Stop listening and cut the connections clients keep alive: the endpoint is gone."""
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            conns = list(self._connections)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
