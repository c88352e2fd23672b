"""An HTTP proxy in front of the real service that loses chosen replies after the service answered.

The request always reaches the service (so a write commits); what the proxy then does with the
reply is the test's choice: pass it on, drop the connection without a byte of it (a reply lost
after the commit), or hold it past the client's timeout. With the service down it answers 502,
as a gateway does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import httpx

HOP_HEADERS = {"host", "connection", "keep-alive", "content-length", "transfer-encoding", "accept-encoding"}


@dataclass
class Rule:
    """What to do with the next ``times`` replies to ``method path``."""

    method: str
    path: str
    action: str  # "drop" | "hold"
    times: int = 1
    seconds: float = 0.0
    before: Callable[[], None] | None = None  # runs once the service answered, before the action


class LossyProxy:
    """``url`` forwards to ``upstream`` (which may change, e.g. after a restart)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.rules: list[Rule] = []
        self.seen: list[tuple[str, str, int]] = []  # (method, path, status) the service answered
        self.arrived: list[tuple[str, str]] = []  # (method, path) of every request, as it arrives
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=120)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def drop(self, method: str, path: str, *, times: int = 1, before: Callable[[], None] | None = None) -> None:
        """Close the connection instead of passing on the next ``times`` replies to ``method path``."""
        self.rules.append(Rule(method, path, "drop", times, before=before))

    def hold(self, method: str, path: str, seconds: float) -> None:
        """Pass on the next reply to ``method path`` only after ``seconds``."""
        self.rules.append(Rule(method, path, "hold", 1, seconds))

    def count(self, method: str, path: str) -> int:
        """How many ``method path`` requests the service answered."""
        return sum(1 for m, p, _ in self.seen if (m, p) == (method, path))

    def sent(self, method: str, path: str) -> int:
        """How many ``method path`` requests the client sent (counted as they arrive)."""
        return self.arrived.count((method, path))

    def take_rule(self, method: str, path: str) -> Rule | None:
        with self._lock:
            for rule in self.rules:
                if (rule.method, rule.path) == (method, path) and rule.times > 0:
                    rule.times -= 1
                    return rule
        return None

    def forward(self, method: str, target: str, headers: dict[str, str], body: bytes) -> httpx.Response | None:
        try:
            return self._client.request(method, self.upstream + target, headers=headers, content=body)
        except httpx.HTTPError:
            return None

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()


def _handler(proxy: LossyProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _relay(self) -> None:
            path = urlsplit(self.path).path
            proxy.arrived.append((self.command, path))
            rule = proxy.take_rule(self.command, path)  # by arrival: the n-th request gets the n-th rule
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
            response = proxy.forward(self.command, self.path, headers, body)
            if response is None:
                self._reply(502, {"content-type": "text/plain"}, b"bad gateway: the service is down")
                return
            proxy.seen.append((self.command, path, response.status_code))
            if rule is not None and rule.before is not None:
                rule.before()
            if rule is not None and rule.action == "drop":
                self.close_connection = True  # not a byte of the reply: the client sees the connection drop
                return
            if rule is not None:
                time.sleep(rule.seconds)
            kept = {k: v for k, v in response.headers.items() if k.lower() not in HOP_HEADERS | {"content-encoding"}}
            self._reply(response.status_code, kept, response.content)

        def _reply(self, status: int, headers: dict[str, str], content: bytes) -> None:
            try:
                self.send_response_only(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
            except OSError:  # the client gave up (its timeout) while the reply was held
                self.close_connection = True

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _relay

    return Handler
