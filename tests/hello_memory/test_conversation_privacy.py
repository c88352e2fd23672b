"""What a removed conversation turn leaves (a tombstone: no text, no id), and what stays as the user left it."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.core.items import message_digest
from hello_memory.stores.records.sqlite import SQLiteRecordStore
from hello_memory.testing.conversation_resend import LibraryEntry, reply, said, texts

PIN = said("my PIN is 4711")


@pytest.fixture
def mm(tmp_path: Path) -> Iterator[MemoryManager]:
    with MemoryManager(Settings(home=tmp_path / "data", embedder="tfidf"), user_id="carol") as manager:
        yield manager


def _rows(store: SQLiteRecordStore) -> list[tuple[str, tuple[object, ...]]]:
    tables = [r[0] for r in store.query("SELECT name FROM sqlite_master WHERE type='table'")]
    return [(t, tuple(row)) for t in tables for row in store.query(f'SELECT * FROM "{t}"')]


def test_a_tombstone_keeps_neither_the_text_nor_the_id_nor_a_guessable_digest(mm: MemoryManager) -> None:
    ids = [t.id for t in mm.add([PIN, reply("noted")], session_id="bank")]
    mm.remove(ids[0])
    store = mm.bundle.records
    assert isinstance(store, SQLiteRecordStore)
    (stone,) = store.tombstones("carol", "bank")
    plain = message_digest("user", None, "my PIN is 4711")
    for table, row in _rows(store):
        flat = json.dumps(row, default=str)
        assert "PIN is" not in flat and ids[0] not in flat and plain not in flat, table
        # the PIN alone, outside the keyed digests (a 64-character hex digest holds "4711" by chance
        # about once in a thousand)
        assert "4711" not in re.sub(r"[0-9a-f]{32,}", "", flat), table
    # Every PIN's plain digest is computable (10,000 guesses); the tombstone matches none without the key.
    guesses = {message_digest("user", None, f"my PIN is {n:04d}") for n in range(10_000)}
    assert stone.digest not in guesses and stone.mark != hashlib.sha256(ids[0].encode()).hexdigest()
    assert mm.add([PIN, reply("noted")], session_id="bank") == [mm.get(ids[1])]


def test_turns_stored_before_digests_are_recognised_by_speaker_and_text(mm: MemoryManager) -> None:
    # What add(messages) stored before this change: turns without message_digest, ids of another scheme.
    legacy = mm.add_many([
        {"content": "Caroline: I went to the support group", "memory_type": "episodic", "session_id": "s",
         "event_type": "conversation", "participants": ["Caroline"], "created_at": f"2023-05-08T13:56:0{n}Z"}
        if n == 0 else
        {"content": "How did it go?", "memory_type": "episodic", "session_id": "s", "event_type": "conversation",
         "participants": ["assistant"], "created_at": f"2023-05-08T13:56:0{n}Z"}
        for n in range(2)
    ])
    assert all(t.message_digest is None for t in legacy)
    again = mm.add([said("I went to the support group", name="Caroline"), reply("How did it go?"),
                    said("It went well", name="Caroline")], session_id="s")
    assert [t.id for t in again[:2]] == [t.id for t in legacy]
    assert texts(LibraryEntry(mm), "s") == [t.content for t in legacy] + ["Caroline: It went well"]


def test_consolidated_turns_are_not_stored_again(mm: MemoryManager) -> None:
    chat = [said("I am allergic to peanuts"), reply("noted")]
    ids = [t.id for t in mm.add(chat, session_id="s", importance=0.9)]
    report = mm.consolidate("episodic", "semantic", importance_threshold=0.8)
    assert set(report.source_ids) == set(ids)
    assert mm.add(chat, session_id="s") == []
    assert texts(LibraryEntry(mm), "s") == []


def test_clear_all_sticks_and_forget_user_starts_afresh(mm: MemoryManager) -> None:
    chat = [PIN, reply("noted")]
    mm.add(chat, session_id="bank")
    assert mm.clear_all() == 2
    assert mm.add(chat, session_id="bank") == []  # what the user deleted stays deleted
    counts = mm.forget_user("carol")
    assert counts["records:tombstones"] == 2
    assert [t.content for t in mm.add(chat, session_id="bank")] == ["my PIN is 4711", "noted"]  # nothing kept


def test_an_edit_is_a_new_version_in_the_turns_history(mm: MemoryManager) -> None:
    ids = [t.id for t in mm.add([said("I live in Paris"), reply("nice"), said("bye")], session_id="s")]
    mm.add([said("I live in Lisbon"), reply("nice"), said("bye")], session_id="s")
    history = mm.history(ids[0])
    assert [(h.event, (h.old or {}).get("content"), (h.new or {}).get("content")) for h in history] == [
        ("add", None, "I live in Paris"), ("update", "I live in Paris", "I live in Lisbon")]
    assert [h.item.id for h in mm.search("Where does the user live? Lisbon", limit=1)] == [ids[0]]


def test_a_tombstone_of_a_turn_still_there_does_not_hide_it(mm: MemoryManager) -> None:
    # Killed between burying a turn and deleting it: the turn is live, its tombstone written.
    from hello_memory.core import tombstones

    sent = [said("hi", id="m1"), reply("ok", id="m2")]
    turns = mm.add(sent, session_id="s")
    tombstones.bury(mm.core, turns[:1])
    assert mm.add(sent, session_id="s") == turns
    assert mm.add([said("hi"), reply("ok")], session_id="plain") == mm.add([said("hi"), reply("ok")],
                                                                          session_id="plain")


def test_the_same_call_from_two_threads_stores_each_turn_once(mm: MemoryManager) -> None:
    from concurrent.futures import ThreadPoolExecutor

    chat = [said("hi"), reply("ok"), said("hi"), reply("ok"), said("bye")]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: [t.id for t in mm.add(chat, session_id="s")], range(8)))
    assert all(r == results[0] for r in results) and len(set(results[0])) == 5
    assert texts(LibraryEntry(mm), "s") == ["hi", "ok", "hi", "ok", "bye"]


def test_in_process_bob_learns_nothing_of_alices_turns_and_cannot_block_her(mm: MemoryManager) -> None:
    from hello_memory.testing.conversation_api import legacy_turn_id

    said_it, unsaid = said("I am pregnant"), said("I am not pregnant")
    first = mm.add([said_it], session_id="c", user_id="alice")
    answers = []
    for message in (said_it, unsaid):  # the id her turn of the text would get, were ids guessable
        guess = legacy_turn_id("alice", "c", message)
        answers.append(mm.add("probe", user_id="bob", memory_id=guess).id == guess)
    assert answers == [True, True]
    nxt = said("and it is a girl")
    for n in (1, 2):  # bob takes every id he can compute for her next messages
        mm.add("mine", user_id="bob", memory_id=legacy_turn_id("alice", "c", nxt, n))
    again = mm.add([said_it, nxt, nxt], session_id="c", user_id="alice")
    assert [t.content for t in again] == ["I am pregnant", "and it is a girl", "and it is a girl"]
    assert again[0] == first[0] and {t.user_id for t in again} == {"alice"}
