"""The clients never raise an untyped error on a response, whatever the other end answers.

A fake server on a loopback socket answers every request with one raw, hostile HTTP reply: JSON
nested thousands of levels deep, the wrong JSON type, a body cut off before its declared length,
an HTML page (a proxy's, with status 200 or 502), a redirect, an error body that is itself hostile.
Every call of ``RemoteMemory``, its whole-store operations and ``RemoteRAG`` must turn each into a
typed :class:`~hello_memory.errors.ServiceError` carrying the HTTP status and a short reason.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("httpx")

from hello_memory.client.discovery import probe
from hello_memory.client.remote import RemoteMemory
from hello_memory.errors import HelloMemoryError, IndexPendingError, PermissionDeniedError, ServiceError
from rag.remote import RemoteRAG

MEMORY_ID = "0f8fad5b-d9cb-469f-a165-70867728950e"
ITEM = (b'{"id":"0f8fad5b-d9cb-469f-a165-70867728950e","user_id":"u","memory_type":"working",'
        b'"content":"x","importance":0.5,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z",'
        b'"metadata":%s}')


def _deep(levels: int) -> bytes:
    return b'{"a": ' * levels + b"1" + b"}" * levels


def _reply(status: int, body: bytes, content_type: str = "application/json", *, length: int | None = None,
           extra: str = "") -> bytes:
    head = (f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n{extra}\r\n")
    return head.encode() + body


HTML = b"<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1>nginx</body></html>"
HOSTILE = {
    "deep-json": _reply(200, b"[" * 5000 + b"]" * 5000),
    "deep-metadata": _reply(200, b"[" + ITEM % _deep(300) + b"]"),
    "deep-object": _reply(200, _deep(100_000)),
    "wrong-type": _reply(200, b'{"unexpected": [1, 2, 3]}'),
    "wrong-scalar": _reply(200, b'"a string"'),
    "truncated-json": _reply(200, b'[{"id": "0f8fad5b-d9cb'),
    "cut-off": _reply(200, b'{"id": "0f8f', length=4000),
    "empty": _reply(200, b""),
    "not-utf8": _reply(200, b"\xff\xfe\x00garbage"),
    "html-200": _reply(200, HTML, "text/html"),
    "html-502": _reply(502, HTML, "text/html"),
    "html-404": _reply(404, HTML, "text/html"),
    "redirect": _reply(302, HTML, "text/html", extra="Location: http://elsewhere.test/login\r\n"),
    "deep-error": _reply(500, b'{"error": ' + _deep(5000) + b"}"),
    "wrong-error": _reply(422, b'{"error": {"code": 5, "type": [], "message": null}}'),
}
STATUS = {"html-502": 502, "html-404": 404, "redirect": 302, "deep-error": 500, "wrong-error": 422}


class FakeServer:
    """Answers every request on a loopback port with ``reply`` (raw bytes), after reading the request."""

    def __init__(self) -> None:
        self.reply = b""
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            reader = conn.makefile("rb")
            headers = {}
            reader.readline()  # request line
            while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            if headers.get("transfer-encoding") == "chunked":
                while (size := int(reader.readline().split(b";")[0] or b"0", 16)) > 0:
                    reader.read(size + 2)
                reader.readline()
            else:
                reader.read(int(headers.get("content-length", "0")))
            conn.sendall(self.reply)

    def close(self) -> None:
        self._sock.close()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def clients(server: FakeServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    doc = tmp_path_factory.mktemp("docs") / "guide.md"
    doc.write_text("# Guide\n\nhello\n", encoding="utf-8")
    mm = RemoteMemory(server.url, user_id="u", retries=0, timeout=10)
    kb = RemoteRAG(server.url, namespace="docs_u", timeout=10)
    kb._http.retries = 0
    yield {"mm": mm, "kb": kb, "doc": doc}
    mm.close()
    kb.close()


CALLS: dict[str, Callable[[dict[str, Any]], object]] = {
    "identity": lambda c: c["mm"].identity(),
    "add": lambda c: c["mm"].add("x"),
    "add_many": lambda c: c["mm"].add_many([{"content": "x"}, {"content": "y"}]),
    "get": lambda c: c["mm"].get(MEMORY_ID),
    "get_all": lambda c: c["mm"].get_all(),
    "search": lambda c: c["mm"].search("x"),
    "history": lambda c: c["mm"].history(MEMORY_ID),
    "update": lambda c: c["mm"].update(MEMORY_ID, content="y"),
    "restore": lambda c: c["mm"].restore(MEMORY_ID),
    "forget": lambda c: c["mm"].forget(),
    "consolidate": lambda c: c["mm"].consolidate(),
    "clear_all": lambda c: c["mm"].clear_all(),
    "forget_user": lambda c: c["mm"].forget_user("u"),
    "stats": lambda c: c["mm"].stats(),
    "all_stats": lambda c: c["mm"].all_stats(),
    "summary": lambda c: c["mm"].summary(),
    "build_context": lambda c: c["mm"].build_context("x"),
    "export_lines": lambda c: list(c["mm"].export_lines()),
    "import_lines": lambda c: c["mm"].import_lines(['{"kind": "hello-memory-export"}']),
    "reindex_graph": lambda c: c["mm"].reindex_graph(),
    "rag.add_document": lambda c: c["kb"].add_document(c["doc"]),
    "rag.add_server_document": lambda c: c["kb"].add_server_document("guide.md"),
    "rag.add_text": lambda c: c["kb"].add_text("# T\n\ntext"),
    "rag.list_documents": lambda c: c["kb"].list_documents(),
    "rag.delete_document": lambda c: c["kb"].delete_document("d"),
    "rag.clear": lambda c: c["kb"].clear(),
    "rag.stats": lambda c: c["kb"].stats(),
    "rag.search": lambda c: c["kb"].search("x"),
    "rag.ask": lambda c: c["kb"].ask("x?"),
}
# ``remove`` reads no body: any 2xx is its answer; the other statuses are errors like everywhere.
CALLS_WITHOUT_BODY = {"remove": lambda c: c["mm"].remove(MEMORY_ID)}


def _check(error: ServiceError, reply: str) -> None:
    assert error.status == STATUS.get(reply, 200), (reply, error.status, str(error))
    assert error.url is not None
    message = str(error)
    assert str(error.status) in message and len(message) < 600, message
    assert "<html" not in message and "Traceback" not in message


@pytest.mark.parametrize("reply", sorted(HOSTILE))
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_hostile_reply_is_a_typed_service_error_with_status_and_reason(server, clients, call, reply):
    server.reply = HOSTILE[reply]
    with pytest.raises(HelloMemoryError) as err:
        CALLS[call](clients)
    assert type(err.value) is ServiceError, f"{call} on {reply}: {type(err.value).__name__}: {err.value}"
    _check(err.value, reply)


@pytest.mark.parametrize("reply", sorted(STATUS))
def test_a_call_reading_no_body_still_refuses_what_is_not_a_success(server, clients, reply):
    server.reply = HOSTILE[reply]
    with pytest.raises(ServiceError) as err:
        CALLS_WITHOUT_BODY["remove"](clients)
    _check(err.value, reply)


def test_an_error_body_missing_its_fields_still_has_every_attribute(server, clients):
    server.reply = _reply(503, b'{"error": {"code": "index_pending", "type": "IndexPendingError", "message": "m"}}')
    with pytest.raises(IndexPendingError) as err:
        clients["mm"].clear_all()
    assert err.value.memory_ids is None and err.value.result is None
    server.reply = _reply(403, b'{"error": {"code": "permission_denied", "type": "PermissionDeniedError", '
                               b'"message": "no"}}')
    with pytest.raises(PermissionDeniedError) as denied:
        clients["mm"].stats()
    assert denied.value.status == 403


def test_the_discovery_probe_treats_a_hostile_health_as_no_service(server):
    for body in (b"[" * 3000 + b"]" * 3000, HTML, b'{"service": "hello-memory"'):
        server.reply = _reply(200, body)
        assert probe(server.url, timeout=5) is None


def test_a_good_reply_still_reads(server, clients):
    server.reply = _reply(200, b"[" + ITEM % b'{"k": "v"}' + b"]")
    assert clients["mm"].get_all()[0].metadata == {"k": "v"}
