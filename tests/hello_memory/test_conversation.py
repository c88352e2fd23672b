"""A conversation given to ``add``: one episodic turn per message, all or nothing, idempotent by derived ids."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.api import MemoryAPI, Messages
from hello_memory.client.remote import RemoteMemory
from hello_memory.models import MemoryItem
from hello_memory.testing.conversation_api import CHAT, ConversationContract, legacy_turn_id
from hello_memory.testing.conversation_resend import LibraryEntry, ResendContract


class TestConversationsEmbedded(ConversationContract):
    @pytest.fixture
    def memory(self, tmp_path: Path) -> Iterator[MemoryManager]:
        with MemoryManager(Settings(home=tmp_path / "data", embedder="tfidf"), user_id="alice") as mm:
            yield mm


class TestConversationsInServerMode(ConversationContract):
    """Records, vectors and the lexical index in Qdrant (local mode in memory): the same turns."""

    @pytest.fixture
    def memory(self, tmp_path: Path) -> Iterator[MemoryManager]:
        settings = Settings(home=tmp_path / "never", embedder="tfidf", qdrant_url=":memory:")
        with MemoryManager(settings, user_id="alice") as mm:
            assert mm.bundle.records.keeps_vectors
            yield mm


def test_a_text_is_still_one_working_memory(tmp_path: Path) -> None:
    with MemoryManager(Settings(home=tmp_path, embedder="tfidf")) as mm:
        item = mm.add("Alice prefers green tea")
        assert item.memory_type == "working" and item.participants == [] and item.event_type is None
        assert mm.add("Bob drinks coffee", memory_type=None).memory_type == "working"  # None: the default


def test_turn_ids_are_keyed_by_the_store_so_no_one_can_compute_them(tmp_path: Path) -> None:
    # The same message in two stores gets two ids (each store has its own random key), and neither is
    # the uuid5 of (user, session, speaker, text, occurrence) that anyone could compute before.
    ids = []
    for home in ("one", "two"):
        with MemoryManager(Settings(home=tmp_path / home, embedder="tfidf"), user_id="alice") as mm:
            ids.append(mm.add(CHAT[:1], session_id="trip")[0].id)
            key = mm.bundle.records.turn_key()
            assert len(key) == 32
        with MemoryManager(Settings(home=tmp_path / home, embedder="tfidf"), user_id="alice") as mm:
            assert mm.bundle.records.turn_key() == key  # kept in the store
            assert mm.add(CHAT[:1], session_id="trip")[0].id == ids[-1]
    assert ids[0] != ids[1] and legacy_turn_id("alice", "trip", CHAT[0]) not in ids


def test_a_conversation_cut_at_its_start_names_the_turns_already_stored(tmp_path: Path) -> None:
    # A chat app that sends its last N messages each time: the window slides, nothing is stored twice.
    with MemoryManager(Settings(home=tmp_path, embedder="tfidf"), user_id="alice") as mm:
        first = mm.add(CHAT[:2], session_id="trip")
        slid = mm.add(CHAT[1:], session_id="trip")
        assert slid[0] == first[1] and len(mm.get_all()) == 3


@pytest.mark.parametrize("impl", [MemoryAPI, MemoryManager, RemoteMemory])
def test_add_is_typed_by_overloads_a_text_gives_an_item_a_conversation_a_list(impl: type) -> None:
    overloads = typing.get_overloads(impl.add)
    hints = [typing.get_type_hints(f) for f in overloads]
    assert [h["return"] for h in hints] == [MemoryItem, list[MemoryItem]]
    assert hints[0]["content"] is str and hints[1]["content"] == Messages


class TestResendEmbedded(ResendContract):
    @pytest.fixture
    def chat(self, tmp_path: Path) -> Iterator[LibraryEntry]:
        with MemoryManager(Settings(home=tmp_path / "data", embedder="tfidf"), user_id="alice") as mm:
            yield LibraryEntry(mm)


class TestResendInServerMode(ResendContract):
    @pytest.fixture
    def chat(self, tmp_path: Path) -> Iterator[LibraryEntry]:
        settings = Settings(home=tmp_path / "never", embedder="tfidf", qdrant_url=":memory:")
        with MemoryManager(settings, user_id="alice") as mm:
            yield LibraryEntry(mm)
