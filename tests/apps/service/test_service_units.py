"""Pieces of the service checked without a server: the wire format, keys, binding rules, optional extras."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from service_runner import REPO

from apps.service.auth import KeyRing, check_bind, is_loopback, read_keys_file
from apps.service.routes_documents import upload_name
from apps.service.server import advertised_url, serve
from apps.service.settings import KeyGrant, ServiceSettings
from hello_memory import errors as E
from hello_memory.validation import MAX_ID_CHARS, check_id
from hello_memory.wire import ERROR_CODES, ErrorBody, decode, encode

SAMPLES: list[E.HelloMemoryError] = [
    E.InvalidInputError("importance must be in [0, 1]", field="importance"),
    E.NotFoundError("no memory 'x' for user 'u'", object_id="x"),
    E.PermissionDeniedError("not yours", status=401),
    E.DimensionMismatchError("memories", 384, 1024, embedder="e5"),
    E.EmbedderMismatchError("memories", "e5", "tfidf"),
    E.StoreLockedError("/data", "pid 7"),
    E.CorruptStoreError("/data/records.db", "not a database"),
    E.StoreError("disk full"),
    E.EmbeddingError("provider down"),
    E.LLMUnavailableError("no LLM"),
    E.LLMError("rate limited"),
    E.MissingDependencyError("markitdown", "docs"),
    E.ConversionError("/home/me/x.pdf", "encrypted", extra="docs"),
    E.ServiceTimeoutError("too slow", url="http://h", status=504),
    E.ServiceError("odd answer", url="http://h", status=502),
    E.IdConflictError("memory id 'm' is taken", memory_id="m"),
    E.IndexPendingError("committed, index pending", memory_ids=["a", "b"]),
    E.DiskFullError("/data", free_bytes=4096, needed_bytes=2**24),
    E.WriteConflictError("lost to a newer write", memory_id="m", expected_version=2, stored_version=3),
    E.HelloMemoryError("something"),
]


@pytest.mark.parametrize("error", SAMPLES, ids=lambda e: type(e).__name__)
def test_every_error_crosses_the_wire_as_itself(error):
    status, body = encode(error)
    assert 400 <= status < 600
    back = decode(ErrorBody.model_validate_json(body.model_dump_json()), status=status)
    assert type(back) is type(error) and str(back) == str(error)
    assert {k: v for k, v in vars(back).items() if k not in ("url", "status")} == {
        k: v for k, v in vars(error).items() if k not in ("url", "status")}


def test_every_error_class_of_the_library_has_a_code():
    classes = [c for c in vars(E).values() if isinstance(c, type) and issubclass(c, E.HelloMemoryError)]
    assert set(classes) <= set(ERROR_CODES), set(classes) - set(ERROR_CODES)
    codes = [code for code, _ in ERROR_CODES.values()]
    assert len(codes) == len(set(codes))


def test_an_unknown_error_type_falls_back_to_its_code_never_to_an_import():
    body = ErrorBody.model_validate({"error": {"code": "not_found", "type": "os.system", "message": "m"}})
    assert type(decode(body)) is E.NotFoundError
    body = ErrorBody.model_validate({"error": {"code": "new_code", "type": "Nope", "message": "m"}})
    assert type(decode(body, status=418)) is E.ServiceError


def test_keys_from_settings_and_file(tmp_path):
    keys = tmp_path / "keys.json"
    digest = "c" * 64
    keys.write_text(json.dumps({"keys": [{"key": "k-file-12345", "user_id": "carol", "namespaces": ["kb"]},
                                         {"key_sha256": digest, "user_id": "dave"}]}), encoding="utf-8")
    ring = KeyRing.from_settings(ServiceSettings(api_keys={"k-alice-1234": "alice"}, admin_key="k-admin-1234",
                                                 keys_file=keys))
    assert not ring.open
    alice = ring.authenticate("Bearer k-alice-1234")
    assert (alice.user_id, alice.admin, alice.namespaces) == ("alice", False, frozenset({"docs_alice"}))
    assert ring.authenticate("bearer k-file-12345").namespaces == frozenset({"kb"})
    assert ring.authenticate("Bearer k-admin-1234").admin
    for header in (None, "", "Bearer nope", "Basic k-alice-1234", "k-alice-1234"):
        with pytest.raises(E.PermissionDeniedError) as err:
            ring.authenticate(header)
        assert err.value.status == 401
    with pytest.raises(E.PermissionDeniedError):
        alice.user("bob")
    with pytest.raises(E.PermissionDeniedError):
        alice.namespace("kb")
    assert alice.user(None) == alice.user("alice") == "alice"


@pytest.mark.parametrize("content", ["not json", '{"keys": 5}', '{"keys": [{"key": "short", "user_id": "a"}]}',
                                     '{"keys": [{"key": "long-enough-key", "user_id": ""}]}',
                                     '{"keys": [{"key": "long-enough-key", "user_id": "a", "role": "x"}]}',
                                     '{"keys": ' + "[" * 5000 + "]" * 5000 + "}"],
                         ids=range(6))
def test_bad_keys_files_are_clear_errors(tmp_path, content):
    path = tmp_path / "keys.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(E.InvalidInputError) as err:
        read_keys_file(path)
    assert str(path) in str(err.value)


def test_short_keys_are_refused():
    with pytest.raises(E.InvalidInputError):
        KeyRing.from_grants({"short": KeyGrant(user_id="a")})


def test_binding_beyond_loopback_needs_keys():
    open_ring = KeyRing({})
    for host in ("127.0.0.1", "127.8.9.1", "::1", "[::1]", "localhost"):
        assert is_loopback(host)
        check_bind(host, open_ring)
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.com"):
        assert not is_loopback(host)
        with pytest.raises(E.InvalidInputError, match="without API keys"):
            check_bind(host, open_ring)
        check_bind(host, KeyRing.from_grants({"long-enough-key": "a"}))


def test_advertised_urls():
    assert advertised_url("0.0.0.0", 8765) == "http://127.0.0.1:8765"
    assert advertised_url("::", 1) == "http://[::1]:1"
    assert advertised_url("localhost", 2) == "http://localhost:2"


@pytest.mark.parametrize("name", ["", " ", ".", "..", "../x.md", "a/b.md", "a\\b.md", "x\x00.md", "a" * 256])
def test_upload_names_must_be_plain(name):
    with pytest.raises(E.InvalidInputError):
        upload_name(name)
    assert upload_name("guide (v2).pdf") == "guide (v2).pdf"


def test_the_clients_name_the_extra_without_httpx():
    code = ("import sys; sys.modules['httpx'] = None\n"
            "from hello_memory.client.remote import RemoteMemory\n"
            "try:\n    RemoteMemory('http://127.0.0.1:1')\n"
            "except Exception as e:\n    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert "MissingDependencyError" in out.stdout and "hello-memory[client]" in out.stdout


def test_the_clients_are_light_to_import():
    code = ("import sys; import hello_memory.client.remote, rag.remote, hello_memory.client.discovery\n"
            "print([m for m in ('fastapi', 'uvicorn', 'gradio', 'torch', 'markitdown', 'apps', 'tools') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_client_needs_an_http_url():
    from hello_memory.client.remote import RemoteMemory

    for url in ("127.0.0.1:8765", "ftp://x", ""):
        with pytest.raises(E.InvalidInputError):
            RemoteMemory(url)


def test_service_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("HELLO_MEMORY_SERVICE_PORT", "9999")
    monkeypatch.setenv("HELLO_MEMORY_SERVICE_API_KEYS", '{"k-env-123456": "erin"}')
    settings = ServiceSettings()
    assert settings.port == 9999
    assert KeyRing.from_settings(settings).authenticate("Bearer k-env-123456").user_id == "erin"
    assert "k-env-123456" not in repr(settings)


def test_request_models_forbid_unknown_fields():
    from apps.service import models

    classes = [c for _, c in inspect.getmembers(models, inspect.isclass)
               if issubclass(c, models._Request) and c is not models._Request]
    assert len(classes) >= 12
    assert all(c.model_config.get("extra") == "forbid" for c in classes)


def test_the_cli_starts_without_loading_the_stores():
    """Through a service the CLI needs none of them: importing them cost ~1 s per command."""
    code = ("import sys; import apps.cli\n"
            "print([m for m in ('apps.assistant', 'hello_memory.manager', 'rag.pipeline', 'numpy', 'gradio') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


@pytest.mark.parametrize("home", [5, "", "  ", "a\x00b", b"/tmp/x"], ids=["int", "empty", "blank", "nul", "bytes"])
def test_serve_refuses_a_hostile_home_before_opening_anything(home):
    with pytest.raises(E.InvalidInputError, match="home"):  # "" used to serve the current directory
        serve(home=home)


def test_an_import_spool_checks_every_line_before_anything_is_imported():
    from apps.service.auth import Principal
    from apps.service.spool import ImportSpool

    alice = Principal("alice")
    spool = ImportSpool(alice.user)
    body = (b'{"kind": "hello-memory-export", "users": {"alice": {"memories": 1}}}\r\n\n'
            b'{"kind": "memory", "item": {"user_id": "bob", "user_id": "alice", "content": "a\xe2\x80\xa8b"}}\n')
    for i in range(0, len(body), 7):  # lines split across chunks anywhere
        spool.feed(body[i:i + 7])
    lines = list(spool.finish())
    assert len(lines) == 3 and lines[1] == ""  # the blank line kept: the library's line numbers stay the file's
    assert json.loads(lines[2])["item"] == {"user_id": "alice", "content": "a\u2028b"}  # what was checked
    assert '"bob"' not in lines[2]

    spool = ImportSpool(alice.user)
    spool.feed(b'{"kind": "hello-memory-export", "users": {}}\n{"kind": "memory", "item": {"user_id": "bob"}}\n')
    spool.feed(b"{not json, read and dropped after the refusal\n")
    with pytest.raises(E.PermissionDeniedError, match=r"^line 2 of the export: .*nothing was imported"):
        spool.finish()
    spool = ImportSpool(Principal("ops", admin=True).user)
    spool.feed(b'{"kind": "hello-memory-export"}\n\xff\xfe\n')
    with pytest.raises(E.InvalidInputError, match="line 2 of the export is not UTF-8"):
        spool.finish()


def test_imports_have_the_upload_body_limit():
    from apps.service.limits import BodyLimit

    limit = BodyLimit(None, max_bytes=1024, max_upload_bytes=4096)  # type: ignore[arg-type]
    assert limit._limit({"method": "POST", "path": "/v1/import"}) == 4096
    assert limit._limit({"method": "POST", "path": "/v1/export"}) == 1024


def test_every_route_of_the_app_refuses_unknown_names_and_parses_deep_json_safely():
    from types import SimpleNamespace

    from fastapi.routing import APIRoute

    from apps.service.app import create_app
    from apps.service.routing import ServiceRoute

    def routes(items: list) -> list[APIRoute]:  # included routers keep their own list of routes
        out = []
        for item in items:
            inner = getattr(item, "original_router", None)
            out += routes(inner.routes) if inner is not None else [item] if isinstance(item, APIRoute) else []
        return out

    app = create_app(SimpleNamespace(service=ServiceSettings()), KeyRing({}), close_on_shutdown=False)  # type: ignore[arg-type]
    found = routes(app.routes)
    # the documentation pages come from fastapi-offline: static HTML that reads no input at all
    pages = {"/docs", "/docs/oauth2-redirect", "/redoc"}
    assert len(found) > 30 and not [r.path for r in found if not isinstance(r, ServiceRoute) and r.path not in pages]


ADVERSARIAL_IDS = ["bob", "docs_bob", "docs_docs_bob", "Bob", "bob ", " bob", "bob/..", "böb", "bo\u0308b",
                   "docs~" + "0" * 64, "x" * 250, "x" * 251, "x" * 252, "x" * 256, "y" * 256, "张三", "*", "%2e%2e"]


def test_default_namespaces_never_collide_across_user_ids():
    from apps.service.users import default_namespace

    spaces = [default_namespace(uid) for uid in ADVERSARIAL_IDS]
    assert len(set(spaces)) == len(spaces)
    assert default_namespace("bob") == "docs_bob" and default_namespace("docs_bob") == "docs_docs_bob"
    for uid in ADVERSARIAL_IDS:  # each one a valid namespace, so every user id can have its knowledge base
        assert check_id(default_namespace(uid), "namespace") == default_namespace(uid)


@given(st.lists(st.text(min_size=1, max_size=MAX_ID_CHARS), min_size=2, max_size=20, unique=True))
def test_the_default_namespace_is_injective(ids):
    from apps.service.users import default_namespace

    valid = [u for u in ids if _valid_id(u)]
    assert len({default_namespace(u) for u in valid}) == len(valid)


def _valid_id(value: str) -> bool:
    try:
        check_id(value, "user_id")
    except E.InvalidInputError:
        return False
    return True


@pytest.mark.parametrize("uid", ADVERSARIAL_IDS, ids=lambda u: f"{u[:14]}-{len(u)}")
def test_a_key_reaches_its_own_default_namespace_and_no_other_users(uid):
    from apps.service.users import default_namespace

    ring = KeyRing.from_grants({"k-0123456789": uid})
    who = ring.authenticate("Bearer k-0123456789")
    assert who.namespaces == frozenset({default_namespace(uid)})
    for other in ADVERSARIAL_IDS:
        if other != uid:
            with pytest.raises(E.PermissionDeniedError):
                who.namespace(default_namespace(other))
    with pytest.raises(E.PermissionDeniedError):
        who.namespace(uid)  # the bare user id is no knowledge base of the key (user "docs_bob" got bob's)
