"""Raw HTTP against a real service: hostile requests get a 4xx with a clear JSON error and write nothing."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from service_runner import REPO, RunningService, service_env, start_service

from hello_memory.errors import InvalidInputError

TABLES = {"records.db": ("memories", "history", "memories_fts", "pending", "facts"),
          "rag.db": ("documents", "chunks", "chunks_fts")}


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningService, Path]]:
    """A service that may read files under one folder (``docs``), next to which lies a secret."""
    root = tmp_path_factory.mktemp("http")
    docs = root / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nThe guide says hello.\n", encoding="utf-8")
    (root / "secret.md").write_text("# Secret\n\nnever index me\n", encoding="utf-8")
    (docs / "link.md").symlink_to(root / "secret.md")
    running = start_service(root / "data", args=("--allow-root", str(docs)))
    with httpx.Client(base_url=running.url, timeout=60) as client:
        client.post("/v1/memories", json={"content": "a first memory", "memory_type": "semantic"}).raise_for_status()
        client.post("/v1/namespaces/default/texts", json={"text": "# T\n\nsome text"}).raise_for_status()
    yield running, docs
    assert running.stop() == 0, running.output()


@pytest.fixture
def client(svc) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=svc[0].url, timeout=60) as c:
        yield c


def counts(home: Path) -> dict[str, int]:
    """Rows of every table that holds memories or documents, read from the files (read-only)."""
    out = {}
    for db, tables in TABLES.items():
        conn = sqlite3.connect(f"file:{home / db}?mode=ro", uri=True)
        try:
            for table in tables:
                out[f"{db}:{table}"] = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        finally:
            conn.close()
    return out


def assert_clear_error(response: httpx.Response, status: int | tuple[int, ...], *words: str) -> dict:
    statuses = (status,) if isinstance(status, int) else status
    assert response.status_code in statuses, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] and error["type"] and error["message"]
    assert "Traceback" not in response.text and 'File "' not in response.text
    for word in words:
        assert word.lower() in error["message"].lower(), error["message"]
    return error


JSON = {"Content-Type": "application/json"}
BAD_BODIES = [
    ("/v1/memories", b'{"content": "x"', "json"),                      # malformed JSON
    ("/v1/memories", b"[1, 2, 3]", "object"),                          # not an object
    ("/v1/memories", b'{"content": 5}', "content"),                    # wrong type
    ("/v1/memories", b'{"content": "x", "importance": "0.5"}', "importance"),
    ("/v1/memories", b'{"content": "x", "importance": true}', "importance"),
    ("/v1/memories", b'{"content": "x", "importance": NaN}', "importance"),
    ("/v1/memories", b'{"content": "x", "metadata": "a string"}', "metadata"),
    ("/v1/memories", b'{"content": "x", "tags": "not-a-list"}', "tags"),
    ("/v1/memories", b'{"content": "x", "colour": "red"}', "colour"),  # unknown field
    ("/v1/memories", b'{"content": "\\ud800 lone surrogate"}', "content"),
    ("/v1/memories", b'{"content": "x", "memory_type": "dream"}', "memory_type"),
    ("/v1/memories", b'{"content": "bad utf-8 \xff\xfe"}', "json"),
    ("/v1/memories", b'{"content": "x", "metadata": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001, ""),
    ("/v1/memories/batch", b'{"items": [{"content": "ok"}, {"content": "x", "importance": 7}]}', "importance"),
    ("/v1/memories/batch", b'{"items": [{"content": "ok"}, {"content": "x", "extra": 1}]}', "extra"),
    ("/v1/memories/search", b'{"query": "x", "limit": "5"}', "limit"),
    ("/v1/memories/search", b'{"query": "x", "limit": 100000}', "limit"),
    ("/v1/memories/forget", b'{"threshold": 1.0, "purge": "false"}', "purge"),
    ("/v1/memories/forget", b'{"threshold": 1.0, "strategy": "whenever"}', "strategy"),
    ("/v1/memories/clear", b'{"user_id": 7}', "user_id"),
    ("/v1/namespaces/default/texts", b'{"text": "x", "chunk_tokens": "big"}', "chunk_tokens"),
    ("/v1/namespaces/default/texts", b'{"text": "", "document_id": "d"}', "text"),
    ("/v1/namespaces/default/search", b'{"query": "x", "enable_mqe": "yes"}', "enable_mqe"),
]


@pytest.mark.parametrize(("path", "body", "word"), BAD_BODIES, ids=range(len(BAD_BODIES)))
def test_bad_bodies_are_422_with_the_field_named_and_write_nothing(svc, client, path, body, word):
    before = counts(svc[0].home)
    error = assert_clear_error(client.post(path, content=body, headers=JSON), (400, 422), word)
    assert error["code"] in ("invalid_input", "bad_request")
    assert counts(svc[0].home) == before


@pytest.mark.parametrize(("method", "path", "status", "word"), [
    ("GET", "/v1/memories?limit=abc", 422, "limit"),
    ("GET", "/v1/memories?include_deleted=perhaps", 422, "include_deleted"),
    ("GET", "/v1/memories/00000000-0000-0000-0000-000000000000", 404, "no memory"),
    ("DELETE", "/v1/memories/00000000-0000-0000-0000-000000000000", 404, "no memory"),
    ("GET", "/v1/nothing-here", 404, "no endpoint"),
    ("PUT", "/v1/memories", 405, "method"),
    ("DELETE", "/v1/namespaces/default/documents/no-such-doc", 404, "no document"),
    ("GET", "/v1/namespaces/bad%00space/documents", 422, "namespace"),
])
def test_bad_routes_and_parameters(svc, client, method, path, status, word):
    before = counts(svc[0].home)
    assert_clear_error(client.request(method, path), status, word)
    assert counts(svc[0].home) == before


def test_oversized_bodies_are_413_declared_or_streamed(svc, client):
    before = counts(svc[0].home)
    big = json.dumps({"content": "x" * (17 * 1024 * 1024)}).encode()
    assert_clear_error(client.post("/v1/memories", content=big, headers=JSON), 413, "limit")

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        yield b'{"content": "'
        for _ in range(20):
            yield b"y" * (1024 * 1024)
        yield b'"}'

    assert_clear_error(client.post("/v1/memories", content=chunks(), headers=JSON), 413, "limit")
    assert counts(svc[0].home) == before
    assert client.get("/health").status_code == 200  # the service is fine afterwards


@pytest.mark.parametrize("path", ["../secret.md", "../../../../etc/passwd", "/etc/passwd", "link.md",
                                  "guide.md/../../secret.md", "\x00guide.md"])
def test_document_paths_outside_the_allowed_roots_are_refused(svc, client, path):
    before = counts(svc[0].home)
    response = client.post("/v1/namespaces/default/documents/path", json={"path": path})
    error = assert_clear_error(response, 403)
    assert error["code"] == "permission_denied" and error["type"] == "PermissionDeniedError"
    assert counts(svc[0].home) == before


def test_a_document_under_the_allowed_root_is_indexed_by_path(svc, client):
    report = client.post("/v1/namespaces/paths/documents/path", json={"path": "guide.md"})
    assert report.status_code == 200, report.text
    assert report.json()["source_path"] == str((svc[1] / "guide.md").resolve())
    hits = client.post("/v1/namespaces/paths/search", json={"query": "what does the guide say"}).json()["hits"]
    assert hits and "hello" in hits[0]["text"]


@pytest.mark.parametrize("name", ["../evil.md", "a/b.md", "..", "x\\..\\y.md", ""])
def test_upload_names_that_leave_the_upload_folder_are_refused(svc, client, name):
    before = counts(svc[0].home)
    response = client.post("/v1/namespaces/default/documents", files={"file": (name, b"# Evil\n\ntext")})
    assert_clear_error(response, 422)
    assert counts(svc[0].home) == before
    assert not (svc[0].home.parent / "evil.md").exists()


def test_a_perceptual_memory_may_not_hash_the_services_files(svc, client):
    before = counts(svc[0].home)
    for spec in ({"source_path": "/etc/passwd"}, {"metadata": {"file_path": "/etc/hostname"}}):
        response = client.post("/v1/memories", json={"content": "a file", "memory_type": "perceptual", **spec})
        assert_clear_error(response, 403, "outside")
    assert counts(svc[0].home) == before


def test_an_unreadable_upload_is_a_conversion_error_naming_the_clients_file(svc, client):
    response = client.post("/v1/namespaces/default/documents", files={"file": ("blob.pdf", os.urandom(2048))},
                           data={"source_path": "/home/me/blob.pdf"})
    error = assert_clear_error(response, 422, "/home/me/blob.pdf")
    assert error["type"] == "ConversionError" and "hm-upload" not in error["message"]


def test_server_timing_names_the_service_and_the_library_call(client):
    timing = client.post("/v1/memories/search", json={"query": "first"}).headers["server-timing"]
    metrics = dict(part.strip().split(";dur=") for part in timing.split(","))
    assert set(metrics) == {"app", "op"} and float(metrics["app"]) >= float(metrics["op"]) > 0
    assert client.get("/health").headers["server-timing"].startswith("app;dur=")  # no library call


def test_health_ready_and_generated_openapi(svc, client):
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["pid"] == svc[0].proc.pid
    assert client.get("/ready").json()["status"] == "ready"
    spec = client.get("/openapi.json").json()
    assert {"/v1/memories", "/v1/memories/search", "/v1/namespaces/{namespace}/ask"} <= set(spec["paths"])
    schemas = spec["components"]["schemas"]
    assert {"MemoryItem", "ScoredMemory", "ContextBlock", "Answer", "AddMemory", "ErrorBody"} - set(schemas) <= {
        "ErrorBody"}
    assert schemas["AddMemory"]["additionalProperties"] is False
    assert "importance" in schemas["MemoryItem"]["properties"]


def test_cross_origin_and_foreign_host_requests_are_refused_without_keys(svc, client):
    page = client.post("/v1/memories", json={"content": "csrf"}, headers={"Origin": "http://evil.example"})
    assert_clear_error(page, 403, "cross-origin")
    rebound = client.get("/v1/memories", headers={"Host": "evil.example:80"})
    assert_clear_error(rebound, 403, "local programs")
    same = client.get("/v1/me", headers={"Origin": svc[0].url})
    assert same.status_code == 200


# -- issue 27 §2: what the service accepts, its clients can read ----------------------------------
DEPTHS = (33, 198, 254, 300, 5000)


def _deep(levels: int) -> str:
    return '{"a": ' * levels + "1" + "}" * levels


def _first_memory(client: httpx.Client) -> dict:
    return next(m for m in client.get("/v1/memories").json() if m["content"] == "a first memory")


DEEP_WRITES = {
    "add": ("POST", "/v1/memories", '{{"content": "x", "metadata": {}}}'),
    "add_many": ("POST", "/v1/memories/batch",
                 '{{"items": [{{"content": "ok"}}, {{"content": "x", "metadata": {}}}]}}'),
    "update": ("PATCH", "/v1/memories/{id}", '{{"metadata": {}}}'),
    "add_text": ("POST", "/v1/namespaces/default/texts", '{{"text": "# T\\n\\nx", "metadata": {}}}'),
    "add_document_path": ("POST", "/v1/namespaces/default/documents/path", '{{"path": "guide.md", "metadata": {}}}'),
}


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("write", sorted(DEEP_WRITES))
def test_metadata_nested_too_deep_is_422_naming_metadata_at_every_depth(svc, client, write, depth):
    method, path, template = DEEP_WRITES[write]
    first = _first_memory(client)
    before = counts(svc[0].home)
    response = client.request(method, path.format(id=first["id"]), content=template.format(_deep(depth)).encode(),
                              headers=JSON)
    error = assert_clear_error(response, 422, "metadata", "nested deeper")
    assert error["code"] == "invalid_input" and error["fields"]["field"] == "metadata"
    assert counts(svc[0].home) == before
    assert _first_memory(client) == first


@pytest.mark.parametrize("depth", DEPTHS)
def test_an_upload_with_metadata_nested_too_deep_is_422(svc, client, depth):
    before = counts(svc[0].home)
    response = client.post("/v1/namespaces/default/documents", files={"file": ("deep.md", b"# Deep\n\ntext")},
                           data={"metadata": _deep(depth)})
    error = assert_clear_error(response, 422, "metadata", "nested deeper")
    assert error["fields"]["field"] == "metadata"
    assert counts(svc[0].home) == before


@pytest.mark.parametrize(("body", "field"), [
    ("[" * 5000 + "]" * 5000, None),
    ('{"query": ' + "[" * 5000 + "]" * 5000 + "}", "query"),
    ('{"query": [{"role": "user", "content": ' + _deep(5000) + "}]}", "content"),
], ids=["array", "query-list", "message-content"])
def test_any_body_nested_past_the_parser_is_422_never_400_or_500(svc, client, body, field):
    error = assert_clear_error(client.post("/v1/memories/search", content=body.encode(), headers=JSON), 422,
                               "nested deeper")
    assert error["fields"].get("field") == field


def test_metadata_at_the_limit_is_stored_and_every_client_reads_it_back(svc, client):
    from hello_memory.client.remote import RemoteMemory

    user = "depth-user"
    with RemoteMemory(svc[0].url, user_id=user) as mm:
        kept = mm.add("thirty-two levels of metadata", metadata=json.loads(_deep(32)))
        for depth in DEPTHS[:-1]:  # 5000 levels cannot even be built in Python without recursion
            with pytest.raises(InvalidInputError) as refused:
                mm.add("too deep", metadata=json.loads(_deep(depth)))
            assert refused.value.field == "metadata"
        assert [m.id for m in mm.get_all()] == [kept.id]
        assert mm.get(kept.id).metadata == kept.metadata
        assert [h.item.id for h in mm.search("thirty-two levels")] == [kept.id]
    result = subprocess.run([sys.executable, "-c", "from apps.cli import main; main()", "search", "thirty-two",
                             "--server", svc[0].url, "--user", user], cwd=REPO, capture_output=True, text=True,
                            timeout=120, env=service_env())
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "thirty-two levels" in result.stdout


# -- issue 27 §4: unknown query parameters and form fields are refused like unknown JSON fields -------
@pytest.mark.parametrize(("method", "path", "word"), [
    ("GET", "/v1/memories?colour=red", "colour"),
    ("GET", "/v1/memories?user_id=default_user&limt=5", "limt"),
    ("GET", "/v1/memories/stats?user=bob", "user"),
    ("GET", "/v1/memories/summary?limit=3&verbose=1", "verbose"),
    ("GET", "/v1/memories/{id}?purge=true", "purge"),
    ("GET", "/v1/memories/{id}/history?all=1", "all"),
    ("DELETE", "/v1/memories/{id}?purge=true", "purge"),
    ("POST", "/v1/memories/search?limit=3", "limit"),
    ("GET", "/v1/namespaces/default/documents?page=2", "page"),
    ("GET", "/v1/me?x=1", "x"),
    ("GET", "/health?verbose=1", "verbose"),
    ("POST", "/v1/import?reembed=false&dry_run=true", "dry_run"),
])
def test_unknown_query_parameters_are_422_naming_them(svc, client, method, path, word):
    first = _first_memory(client)
    before = counts(svc[0].home)
    body = b'{"query": "first"}' if path.startswith("/v1/memories/search") else None
    response = client.request(method, path.format(id=first["id"]), content=body, headers=JSON)
    error = assert_clear_error(response, 422, word, "unknown")
    assert error["code"] == "invalid_input" and error["fields"]["field"] == word
    assert counts(svc[0].home) == before
    assert _first_memory(client) == first


def test_unknown_form_fields_of_an_upload_are_422_naming_them(svc, client):
    before = counts(svc[0].home)
    response = client.post("/v1/namespaces/default/documents", files={"file": ("form.md", b"# Form\n\ntext")},
                           data={"document_id": "form-doc", "chunk_size": "100"})
    error = assert_clear_error(response, 422, "chunk_size", "unknown")
    assert error["fields"]["field"] == "chunk_size"
    assert counts(svc[0].home) == before
    known = client.post("/v1/namespaces/default/documents", files={"file": ("form.md", b"# Form\n\ntext")},
                        data={"document_id": "form-doc", "chunk_tokens": "100", "source_path": "/home/me/form.md"})
    assert known.status_code == 200, known.text
    assert client.delete("/v1/namespaces/default/documents/form-doc").json() == {"count": 1}
