"""Durability across versions: a data directory written before the memories table gained its
search columns (valid_to, modality, entity_ids, lex) must open, keep every memory, and stay usable.

Found when a crash trial's child imported a newer schema than the directory it reopened:
``sqlite3.OperationalError: table memories has no column named valid_to`` on the first add.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path

from rel_scan import memory_problems

from hello_memory import MemoryManager, Settings
from hello_memory.models import Entity, MemoryItem
from hello_memory.stores.records.sqlite import SQLiteRecordStore
from hello_memory.stores.records.sqlite_lexical import fts_tokens, scope_token
from hello_memory.stores.records.sqlite_rows import SCHEMA as _SCHEMA
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

OLD_COLUMNS = ",\n    valid_to REAL, modality TEXT, entity_ids TEXT NOT NULL DEFAULT '', lex TEXT NOT NULL DEFAULT ''"


def _old_directory(home: Path) -> MemoryItem:
    home.mkdir(parents=True)
    old = MemoryItem(user_id="alice", memory_type="semantic", content="Alice lives in Paris",
                     valid_to=datetime(2025, 5, 1, tzinfo=timezone.utc),
                     entities=[Entity(id="e-alice", name="Alice", type="person")])
    assert OLD_COLUMNS in _SCHEMA
    with closing(sqlite3.connect(home / "records.db")) as conn:
        conn.executescript(_SCHEMA.replace(OLD_COLUMNS, ""))
        conn.execute(f"INSERT INTO memories VALUES ({','.join('?' * 14)})", SQLiteRecordStore.to_row(old)[:14])
        conn.execute("INSERT INTO memories_fts(rowid, scope, tokens) VALUES (1, ?, ?)",
                     (scope_token("alice"), " ".join(fts_tokens(["alice", "live", "pari"]))))
        conn.execute("PRAGMA user_version=1")
        conn.commit()
    return old


def test_directory_from_the_previous_schema_opens_and_keeps_its_memories(tmp_path: Path) -> None:
    home = tmp_path / "data"
    old = _old_directory(home)
    with MemoryManager(Settings(home=home), user_id="alice", embedder=DeterministicFakeEmbedder(16)) as mm:
        got = mm.get(old.id)
        assert got.content == old.content and got.valid_to == old.valid_to
        row = mm.bundle.records.conn.execute(
            "SELECT valid_to, entity_ids, lex FROM memories WHERE id=?", (old.id,)).fetchone()
        assert row == (old.valid_to.timestamp(), "e-alice", "alice live pari")  # backfilled
        new = mm.add("Alice works at Acme", memory_type="semantic")
        assert new.id in {h.item.id for h in mm.search("Alice works at Acme")}
        assert mm.bundle.records.lexical_search("alice", ["pari"], types=None, limit=5) != {}
        mm.remove(old.id)
        assert memory_problems(home, mm.bundle.vectors) == []
