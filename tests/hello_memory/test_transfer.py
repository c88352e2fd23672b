"""``hello-memory export --full`` / ``import``: a data directory to server mode and back, counts verified."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hello_memory import MemoryManager, Settings
from hello_memory.cli import app
from hello_memory.errors import EmbedderMismatchError, InvalidInputError, StoreError
from hello_memory.models import ImportReport
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder


def _fill(mm: MemoryManager) -> dict[str, str]:
    paris = mm.add("Alice lives in Paris", memory_type="semantic", importance=0.8)
    mm.add("Alice lives in Rome", memory_type="semantic")  # supersedes Paris
    turn = mm.add("Met Carol at the Berlin conference", memory_type="episodic", session_id="s1")
    gone = mm.add("an old note", memory_type="episodic", importance=0.05)
    mm.forget(strategy="importance_based", threshold=0.1, memory_types=["episodic"])
    mm.update(turn.id, content="Met Carol and Dan at the Berlin conference")
    mm.add("Bob likes tea", memory_type="semantic", user_id="bob")
    return {"paris": paris.id, "turn": turn.id, "gone": gone.id}


def _state(mm: MemoryManager, user: str) -> list[tuple[str, str, bool, list[str]]]:
    items = mm.get_all(user_id=user, include_deleted=True)
    return sorted(
        (it.id, it.content, it.deleted_at is None, [h.event for h in mm.history(it.id, user_id=user)])
        for it in items
    )


def test_a_data_directory_moves_to_server_mode_and_back(tmp_path: Path) -> None:
    embedded = Settings(home=tmp_path / "home", embedder="tfidf")
    with MemoryManager(embedded, user_id="alice") as mm:
        ids = _fill(mm)
        before = {u: _state(mm, u) for u in ("alice", "bob")}
        dump = list(mm.export_lines())
    assert json.loads(dump[0])["users"]["alice"]["memories"] == 4 and len(dump) == 6

    server = Settings(home=tmp_path / "never", embedder="tfidf", qdrant_url=str(tmp_path / "qdrant"))
    with MemoryManager(server, user_id="alice") as mm:
        assert mm.import_lines(dump) == ImportReport(memories=5, reembedded=0)  # the vectors travelled
        assert mm.import_lines(dump).memories == 5  # idempotent
        assert {u: _state(mm, u) for u in ("alice", "bob")} == before
        assert mm.get(ids["paris"]).superseded_by is not None
        assert [h.item.id for h in mm.search("Berlin conference", limit=1)] == [ids["turn"]]
        assert ids["gone"] not in {h.item.id for h in mm.search("old note")}
        assert mm.stats().entities > 0  # graph links written in the target mode
        back = list(mm.export_lines(vectors=False))
    assert not (tmp_path / "never").exists()

    with MemoryManager(Settings(home=tmp_path / "again", embedder="tfidf"), user_id="alice") as mm:
        assert mm.import_lines(back).reembedded == 4  # no vectors in the file: the 4 live ones embedded
        assert {u: _state(mm, u) for u in ("alice", "bob")} == before
        assert [h.item.id for h in mm.search("Berlin conference", limit=1)] == [ids["turn"]]


def test_another_embedder_is_refused_unless_reembedding(tmp_path: Path) -> None:
    with MemoryManager(Settings(home=tmp_path / "a", embedder="tfidf"), user_id="alice") as mm:
        mm.add("Alice lives in Paris", memory_type="semantic")
        dump = list(mm.export_lines())
    other = DeterministicFakeEmbedder()
    with MemoryManager(Settings(home=tmp_path / "b"), user_id="alice", embedder=other) as mm:
        with pytest.raises(EmbedderMismatchError, match="--reembed"):
            mm.import_lines(dump)
        assert mm.get_all() == []  # nothing imported
        assert mm.import_lines(dump, reembed=True) == ImportReport(memories=1, reembedded=1)
        assert [h.item.content for h in mm.search("Paris")] == ["Alice lives in Paris"]


def test_a_truncated_or_foreign_file_is_refused(tmp_path: Path) -> None:
    with MemoryManager(Settings(home=tmp_path / "a", embedder="tfidf"), user_id="alice") as mm:
        for i in range(3):
            mm.add(f"note {i}", memory_type="episodic")
        dump = list(mm.export_lines())
    with MemoryManager(Settings(home=tmp_path / "b", embedder="tfidf"), user_id="alice") as mm:
        with pytest.raises(StoreError, match="does not match the export"):
            mm.import_lines(dump[:-1])  # the last line lost in transit
        with pytest.raises(InvalidInputError, match="not a hello-memory export"):
            mm.import_lines(io.StringIO('{"content": "an old-style export line"}\n'))
        with pytest.raises(InvalidInputError, match="line 3"):
            mm.import_lines([dump[0], dump[1], "{not json"])


def test_the_command_line_moves_a_directory_to_server_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HELLO_MEMORY_EMBEDDER", "tfidf")
    with MemoryManager(Settings(home=tmp_path / "home"), user_id="alice") as mm:
        mm.add("Alice lives in Paris", memory_type="semantic")
    runner = CliRunner()
    out = tmp_path / "dump.jsonl"
    done = runner.invoke(app, ["export", "--full", "--home", str(tmp_path / "home"), "-o", str(out)])
    assert done.exit_code == 0 and "exported 1 memories" in done.output
    monkeypatch.setenv("QDRANT_URL", str(tmp_path / "qdrant"))
    done = runner.invoke(app, ["import", str(out)])
    assert done.exit_code == 0 and "imported 1 memories, counts verified" in done.output
    with MemoryManager(Settings(), user_id="alice") as mm:
        assert [m.content for m in mm.get_all()] == ["Alice lives in Paris"] and mm.bundle.home is None


def _export(tmp_path: Path, n: int = 3) -> list[str]:
    with MemoryManager(Settings(home=tmp_path / "src"), user_id="alice", embedder=DeterministicFakeEmbedder(32)) as mm:
        mm.add_many([{"content": f"memory number {i}", "memory_type": "episodic"} for i in range(n)])
        return list(mm.export_lines())


def _hostile(line: str, change: str) -> str:
    data = json.loads(line)
    if change == "nul user":
        data["item"]["user_id"] = "eve\x00"
    elif change == "oversize content":
        data["item"]["content"] = "x" * 1_000_000
    elif change == "year 9999":
        data["item"]["created_at"] = "9999-01-01T00:00:00Z"
    elif change == "deep metadata":
        deep: dict[str, object] = {}
        for _ in range(200):
            deep = {"d": deep}
        data["item"]["metadata"] = deep
    elif change == "nan vector":
        data["vector"][0] = float("nan")
    elif change == "wrong dimension":
        data["vector"] = data["vector"][:16]
    elif change == "another memory's history":
        data["history"][0]["memory_id"] = "0b6f2d1e-8a4c-4f7e-b3d9-5c1a7e2f9d40"
    return json.dumps(data)


@pytest.mark.parametrize(
    "change",
    ["nul user", "oversize content", "year 9999", "deep metadata", "nan vector", "wrong dimension",
     "another memory's history"],
)
def test_a_hostile_line_is_refused_before_anything_of_it_is_stored(tmp_path: Path, change: str) -> None:
    """Import passes the same gate as ``add`` (issue 24): before, these were stored (and a NUL user
    could never be forgotten; a NaN vector raised after its memory was stored)."""
    dump = _export(tmp_path)
    dump[2] = _hostile(dump[2], change)
    with MemoryManager(Settings(home=tmp_path / "dst"), user_id="alice", embedder=DeterministicFakeEmbedder(32)) as mm:
        with pytest.raises(InvalidInputError, match="line 3 of the export was refused") as caught:
            mm.import_lines(dump)
        assert "0 memories were imported before" in str(caught.value)
        assert mm.bundle.records.users() == []  # nothing of the batch stored
        assert mm.bundle.records.unsettled() == []


def test_a_history_naming_another_users_memory_is_refused_and_hers_stays_readable(tmp_path: Path) -> None:
    """Issue 34: a line whose history named another memory (here: alice's, in the target) was stored —
    the entry under her memory's id — and reading her history then answered 503."""
    settings = Settings(home=tmp_path / "dst")
    with MemoryManager(settings, user_id="alice", embedder=DeterministicFakeEmbedder(32)) as mm:
        hers = mm.add("alice's own note", memory_type="episodic")
        dump = _export(tmp_path)
        data = json.loads(dump[1])
        data["item"]["user_id"] = "mallory"
        data["history"][0]["memory_id"] = hers.id
        dump[1] = json.dumps(data)
        with pytest.raises(InvalidInputError, match=f"line 2 of the export was refused: .*names memory {hers.id}"):
            mm.import_lines(dump)
        assert mm.bundle.records.users() == ["alice"]
        assert [h.event for h in mm.history(hers.id)] == ["add"]


def test_a_file_failing_midway_says_how_much_was_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hello_memory.core import transfer

    monkeypatch.setattr(transfer, "_BATCH", 2)
    good = _export(tmp_path, n=5)
    bad = [*good[:4], _hostile(good[4], "year 9999"), good[5]]  # the 4th memory: batch 2 (3rd, 4th) refused
    with MemoryManager(Settings(home=tmp_path / "dst"), user_id="alice", embedder=DeterministicFakeEmbedder(32)) as mm:
        with pytest.raises(InvalidInputError, match=r"line 5 .* 2 memories were imported before"):
            mm.import_lines(bad)
        assert len(mm.get_all(limit=100)) == 2
        assert mm.import_lines(good) == ImportReport(memories=5, reembedded=0)  # the fixed file: the rest
        assert len(mm.get_all(limit=100)) == 5
