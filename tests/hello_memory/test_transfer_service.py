"""``export --full`` / ``import`` / ``reindex`` through a running memory service, embedded and server mode.

The service is the real one (``python -m apps.service``, uvicorn on loopback, tf-idf), once with a
data directory and once in server mode (``QDRANT_URL`` = a local path); the CLI runs in process in
an empty working directory, so a command that fell back to a local store would leave
``./hello_memory_data`` behind. Before: ``export --full`` ignored ``--server`` and wrote an empty
backup with exit 0, ``import`` and ``reindex`` had no ``--server``, ``RemoteMemory`` had no
``export_lines`` / ``import_lines`` / ``reindex_graph``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from typer.testing import CliRunner, Result  # noqa: E402

from hello_memory import MemoryManager, Settings  # noqa: E402
from hello_memory.api import MemoryAPI  # noqa: E402
from hello_memory.cli import app  # noqa: E402
from hello_memory.client import transport  # noqa: E402
from hello_memory.client.remote import RemoteMemory  # noqa: E402
from hello_memory.errors import (  # noqa: E402
    EmbedderMismatchError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    ServiceError,
)
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder  # noqa: E402
from tests.apps.service.service_runner import KEYS, RunningService, start_service  # noqa: E402

ADMIN, ALICE = KEYS["admin"], KEYS["alice"]
UPLOAD_LIMIT = 4 * 1024 * 1024  # the tests' imports are far smaller
Cli = Callable[..., Result]


@pytest.fixture(scope="module", params=["embedded", "server"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    """A keyed service (alice, bob, admin) with a data directory, or in server mode (no directory)."""
    root = tmp_path_factory.mktemp(f"transfer-{request.param}")
    keys = root / "keys.json"
    keys.write_text(json.dumps({"keys": [
        {"key": ALICE, "user_id": "alice"},
        {"key": KEYS["bob"], "user_id": "bob"},
        {"key": ADMIN, "user_id": "ops", "admin": True},
    ]}), encoding="utf-8")
    env = {"HELLO_MEMORY_SERVICE_MAX_UPLOAD_BYTES": str(UPLOAD_LIMIT)}
    if request.param == "server":
        env["QDRANT_URL"] = str(root / "qdrant")
    running = start_service(root / "data", args=("--keys-file", str(keys)), env=env)
    yield running
    assert running.stop() == 0, running.output()
    assert (root / "data").exists() == (request.param == "embedded")


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """The CLI in process, in an empty working directory (``tmp_path``)."""
    monkeypatch.setenv("HELLO_MEMORY_EMBEDDER", "tfidf")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(transport, "BACKOFF", 0.001)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


def _fresh(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:10]}"


def _fill(mm: MemoryAPI, first: str, second: str) -> None:
    paris = mm.add("Alice lives in Paris", memory_type="semantic", importance=0.8, user_id=first)
    mm.add("Alice lives in Rome", memory_type="semantic", user_id=first)  # supersedes Paris
    turn = mm.add("Met Carol at the Berlin conference", memory_type="episodic", session_id="s1", user_id=first)
    mm.add("an old note", memory_type="episodic", importance=0.05, user_id=first)
    mm.forget(strategy="importance_based", threshold=0.1, memory_types=["episodic"], user_id=first)
    mm.update(turn.id, content="Met Carol and Dan at the Berlin conference", user_id=first)
    mm.add("Bob's line\u2028separator stays one line", memory_type="semantic", user_id=second)
    assert mm.get(paris.id, user_id=first).superseded_by is not None


def _state(mm: MemoryAPI, user: str) -> list[tuple[str, str, bool, str | None, list[str]]]:
    items = mm.get_all(user_id=user, include_deleted=True)
    return sorted(
        (it.id, it.content, it.deleted_at is None, it.superseded_by, [h.event for h in mm.history(it.id, user_id=user)])
        for it in items
    )


def _lines(path: Path) -> list[str]:
    """A JSON Lines file's lines: split on ``\n`` only (``str.splitlines`` also splits on U+2028)."""
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def _export(mm: MemoryManager) -> list[str]:
    return list(mm.export_lines())


def test_a_home_moves_into_the_service_and_out_to_another_home(served: RunningService, cli: Cli,
                                                                 tmp_path: Path) -> None:
    first, second = _fresh("alice"), _fresh("bob")
    with MemoryManager(Settings(home=tmp_path / "src", embedder="tfidf"), user_id=first) as mm:
        _fill(mm, first, second)
        before = {u: _state(mm, u) for u in (first, second)}

    out = cli("export", "--full", "--home", tmp_path / "src", "-o", "a.jsonl")
    assert out.exit_code == 0 and "exported 5 memories to a.jsonl" in out.output, out.output
    out = cli("import", "a.jsonl", "--server", served.url, "--api-key", ADMIN)
    assert out.exit_code == 0, out.output
    assert "imported 5 memories, counts verified (0 embedded again)" in out.output
    with RemoteMemory(served.url, api_key=ADMIN) as remote:
        assert {u: _state(remote, u) for u in (first, second)} == before
        assert [h.item.content for h in remote.search("Berlin conference", user_id=first, limit=1)] == [
            "Met Carol and Dan at the Berlin conference"]

    out = cli("export", "--full", "--server", served.url, "--api-key", ADMIN, "-o", "b.jsonl")
    assert out.exit_code == 0 and "exported" in out.output, out.output
    lines = _lines(tmp_path / "b.jsonl")
    assert {first, second} <= set(json.loads(lines[0])["users"])
    assert len(lines) - 1 == sum(u["memories"] for u in json.loads(lines[0])["users"].values())
    out = cli("import", "b.jsonl", "--home", tmp_path / "dst")
    assert out.exit_code == 0 and "counts verified (0 embedded again)" in out.output, out.output
    with MemoryManager(Settings(home=tmp_path / "dst", embedder="tfidf"), user_id=first) as mm:
        assert {u: _state(mm, u) for u in (first, second)} == before
        assert [h.item.content for h in mm.search("Berlin conference", limit=1)] == [
            "Met Carol and Dan at the Berlin conference"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl", "dst", "src"]  # no ./hello_memory_data


def test_every_command_finds_the_service_by_itself(served: RunningService, cli: Cli, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the home's SERVICE file (a data directory), else HELLO_MEMORY_SERVER_URL (server mode)."""
    user = _fresh("carol")
    with RemoteMemory(served.url, api_key=ADMIN, user_id=user) as remote:
        remote.add("Carol lives in Lisbon", memory_type="semantic")
    if (served.home / "SERVICE").exists():
        where: list[object] = ["--home", served.home]
    else:
        monkeypatch.setenv("HELLO_MEMORY_SERVER_URL", served.url)
        where = []
    monkeypatch.setenv("HELLO_MEMORY_API_KEY", ADMIN)
    out = cli("export", "--full", *where, "-o", "all.jsonl")
    assert out.exit_code == 0 and "exported" in out.output and " 0 memories" not in out.output, out.output
    assert user in json.loads(_lines(tmp_path / "all.jsonl")[0])["users"]
    out = cli("reindex", "--graph", "--user", user, *where)
    assert out.exit_code == 0 and "graph rebuilt: 1 semantic memories of 1 users" in out.output, out.output
    out = cli("stats", "--user", user, *where)
    assert out.exit_code == 0 and "1 memories" in out.output, out.output
    out = cli("import", "all.jsonl", *where)
    assert out.exit_code == 0 and "counts verified" in out.output, out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["all.jsonl"]  # nothing opened locally


def test_a_normal_key_exports_imports_and_reindexes_only_its_own_user(served: RunningService, cli: Cli,
                                                                        tmp_path: Path) -> None:
    other = _fresh("carol")
    with RemoteMemory(served.url, api_key=ADMIN) as admin:
        admin.add("Bob likes green tea", memory_type="semantic", user_id="bob")
        admin.add("Alice works at Acme", memory_type="semantic", user_id="alice")
    with RemoteMemory(served.url, api_key=ALICE) as alice:
        lines = list(alice.export_lines())
        assert list(json.loads(lines[0])["users"]) == ["alice"]
        assert {json.loads(line)["item"]["user_id"] for line in lines[1:]} == {"alice"}
        with pytest.raises(PermissionDeniedError, match="cannot act for user 'bob'"):
            list(alice.export_lines(users=["bob"]))
        assert alice.reindex_graph().users == 1
        with pytest.raises(PermissionDeniedError):
            alice.reindex_graph("bob")

    with MemoryManager(Settings(home=tmp_path / "src", embedder="tfidf"), user_id="alice") as mm:
        mine = mm.add("Alice moved to Oslo", memory_type="semantic")
        mm.add("Carol likes chess", memory_type="semantic", user_id=other)
        both = _export(mm)
    header = json.loads(both[0])
    only_alice = json.dumps({**header, "users": {"alice": header["users"]["alice"]}})
    sneaky = [only_alice, *(ln for ln in both[1:] if '"user_id": "alice"' in ln),
              *(ln for ln in both[1:] if f'"user_id": "{other}"' in ln)]
    with RemoteMemory(served.url, api_key=ALICE) as alice:
        with pytest.raises(PermissionDeniedError, match="line 1 of the export"):
            alice.import_lines(both)  # the header names the other user
        with pytest.raises(PermissionDeniedError, match="line 3 of the export"):
            alice.import_lines(sneaky)  # the last line is another user's
        with pytest.raises(NotFoundError):
            alice.get(mine.id)  # nothing was stored, not even the lines before the refused one
    (tmp_path / "sneaky.jsonl").write_text("\n".join(sneaky) + "\n", encoding="utf-8")
    out = cli("import", "sneaky.jsonl", "--server", served.url, "--api-key", ALICE)
    errors = [ln for ln in out.output.splitlines() if ln.strip()]
    assert out.exit_code == 2 and len(errors) == 1 and errors[0].startswith("error: line 3 of the export"), out.output
    out = cli("export", "--full", "--server", served.url, "--api-key", ALICE, "-o", "mine.jsonl")
    assert out.exit_code == 0, out.output
    assert list(json.loads(_lines(tmp_path / "mine.jsonl")[0])["users"]) == [
        "alice"]
    with RemoteMemory(served.url, api_key=ADMIN) as admin:
        assert admin.get_all(user_id=other) == []
        assert admin.import_lines(both).memories == 2  # the admin key imports any user's lines
        assert [m.content for m in admin.get_all(user_id=other)] == ["Carol likes chess"]


def test_the_librarys_import_errors_come_back_typed(served: RunningService, cli: Cli, tmp_path: Path) -> None:
    user = _fresh("dora")
    with MemoryManager(Settings(home=tmp_path / "fake"), user_id=user, embedder=DeterministicFakeEmbedder()) as mm:
        mm.add("Dora plays the cello", memory_type="semantic")
        foreign = _export(mm)
    with RemoteMemory(served.url, api_key=ADMIN) as admin:
        with pytest.raises(EmbedderMismatchError, match="--reembed"):
            admin.import_lines(foreign)
        with pytest.raises(InvalidInputError, match="line 2 of the export is not JSON"):
            admin.import_lines([foreign[0], "{not json", foreign[1]])
        assert admin.get_all(user_id=user) == []
        assert admin.import_lines(foreign, reembed=True).reembedded == 1
        assert [h.item.content for h in admin.search("cello", user_id=user)] == ["Dora plays the cello"]
    (tmp_path / "bad.jsonl").write_text('{"content": "an old-style export line"}\n', encoding="utf-8")
    out = cli("import", "bad.jsonl", "--server", served.url, "--api-key", ADMIN)
    assert out.exit_code == 2 and "error: not a hello-memory export" in out.output, out.output


def test_an_import_over_the_upload_limit_is_refused_and_stores_nothing(served: RunningService,
                                                                        tmp_path: Path) -> None:
    user = _fresh("erin")
    with MemoryManager(Settings(home=tmp_path / "src", embedder="tfidf"), user_id=user) as mm:
        mm.add("Erin keeps bees", memory_type="semantic")
        header, line = _export(mm)
    copies = UPLOAD_LIMIT // len(line) + 10  # the same memory again and again: the body alone is too big
    with RemoteMemory(served.url, api_key=ADMIN) as admin:
        with pytest.raises(InvalidInputError, match=r"over this service's limit .*MAX_UPLOAD_BYTES"):
            admin.import_lines([header, *[line] * copies])
        assert admin.get_all(user_id=user) == []
        assert admin.import_lines([header, line]).memories == 1  # the service is fine afterwards


def test_a_reply_that_breaks_off_is_an_error_never_a_shorter_export() -> None:
    class BrokenOff(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield b'{"kind": "hello-memory-export"}\n{"kind": "memory", "item": {"content": "a\xe2\x80\xa8b"}}\n{"ki'
            raise httpx.ReadError("connection reset by peer")

    client = httpx.Client(base_url="http://memory.test",
                          transport=httpx.MockTransport(lambda request: httpx.Response(200, stream=BrokenOff())))
    with RemoteMemory("http://memory.test", client=client) as mm:
        lines = mm.export_lines()
        assert json.loads(next(lines))["kind"] == "hello-memory-export"
        assert json.loads(next(lines))["item"]["content"] == "a\u2028b"  # U+2028 is data, not a line end
        with pytest.raises(ServiceError, match="broke off"):
            next(lines)
