"""Contract of a conversation sent again and again, as chat apps send it: one suite, every entry point.

A chat app sends its whole history each time, its last N messages, or only the new ones; the user
edits a message, regenerates a reply, removes or forgets a turn. :class:`ResendContract` says what
``add(messages)`` keeps in each case (README, "Store chat history"). Subclass it with a ``chat``
fixture: a :class:`ChatEntry` — the entry point under test (the library, ``RemoteMemory``, the
``memory`` tool, MCP's ``memory_add``) together with a :class:`~hello_memory.api.MemoryAPI` on the
same store to look at the turns and to change them as a user would. The user has no memories yet;
``Settings(embedder="tfidf")``.

Example:
    >>> class TestMine(ResendContract):                            # doctest: +SKIP
    ...     @pytest.fixture
    ...     def chat(self, tmp_path):
    ...         with MemoryManager(Settings(home=tmp_path, embedder="tfidf")) as mm:
    ...             yield LibraryEntry(mm)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from hello_memory.api import MemoryAPI
from hello_memory.models import MemoryItem

Message = dict[str, Any]


def said(text: str, role: str = "user", **extra: Any) -> Message:
    """A chat message."""
    return {"role": role, "content": text, **extra}


def reply(text: str, **extra: Any) -> Message:
    """An assistant message."""
    return said(text, "assistant", **extra)


class ChatEntry(Protocol):
    """An entry point that takes a conversation, and a memory on the same store to look at it.

    ``send`` takes the contract's session names; an entry may map them to session ids of its own
    (``session``), so that one user can run every test.
    """

    memory: MemoryAPI
    user_id: str

    def send(self, messages: Sequence[Message], *, session_id: str) -> list[str]:
        """Send the messages (``add``) and return the ids of the turns the entry point answers, in order."""
        ...

    def session(self, name: str) -> str:
        """The session id the contract's session ``name`` is stored under."""
        ...


class LibraryEntry:
    """``MemoryAPI.add(messages)`` itself (``MemoryManager``, ``RemoteMemory``); ``prefix`` names the sessions."""

    def __init__(self, memory: MemoryAPI, prefix: str = "") -> None:
        self.memory = memory
        self.user_id = memory.user_id
        self.prefix = prefix

    def session(self, name: str) -> str:
        """``prefix`` + ``name``."""
        return self.prefix + name

    def send(self, messages: Sequence[Message], *, session_id: str) -> list[str]:
        """``memory.add(messages, session_id=...)``."""
        return [t.id for t in self.memory.add(list(messages), session_id=self.session(session_id))]


def turns(chat: ChatEntry, session: str, *, deleted: bool = False) -> list[MemoryItem]:
    """The session's turns, oldest first (``deleted``: forgotten ones too)."""
    found = chat.memory.get_all(user_id=chat.user_id, memory_type="episodic", include_deleted=deleted)
    return sorted((t for t in found if t.session_id == chat.session(session)), key=lambda t: t.created_at)


def texts(chat: ChatEntry, session: str) -> list[str]:
    """The contents of the session's live turns, oldest first."""
    return [t.content for t in turns(chat, session)]


HELLO = [said("hi"), reply("ok"), said("I moved to Lisbon"), reply("ok")]
LATER = [said("and I work remotely"), reply("ok")]


class ResendContract:
    """What a re-sent conversation stores, through any entry point; needs a ``chat`` fixture (module docstring)."""

    def test_a_sliding_window_keeps_every_repeat(self, chat: ChatEntry) -> None:
        chat.send(HELLO, session_id="s")
        chat.send([*HELLO[2:], *LATER], session_id="s")  # the last 2 messages again, and 2 new ones
        assert texts(chat, "s") == ["hi", "ok", "I moved to Lisbon", "ok", "and I work remotely", "ok"]

    def test_the_whole_history_again_stores_only_the_new_messages(self, chat: ChatEntry) -> None:
        first = chat.send(HELLO, session_id="s")
        again = chat.send([*HELLO, *LATER], session_id="s")
        assert again[:4] == first and len(set(again)) == 6
        assert chat.send([*HELLO, *LATER], session_id="s") == again  # a retry: nothing new
        assert texts(chat, "s") == [m["content"] for m in [*HELLO, *LATER]]

    def test_only_the_new_messages_each_time(self, chat: ChatEntry) -> None:
        for message in [*HELLO, *LATER]:
            chat.send([message], session_id="s")
        assert texts(chat, "s") == [m["content"] for m in [*HELLO, *LATER]]

    def test_an_updated_turn_stays_updated_and_the_chat_goes_on(self, chat: ChatEntry) -> None:
        ids = chat.send(HELLO, session_id="s")
        chat.memory.update(ids[2], content="I moved to Porto", user_id=chat.user_id)
        again = chat.send([*HELLO, *LATER], session_id="s")
        assert again[:4] == ids
        assert texts(chat, "s") == ["hi", "ok", "I moved to Porto", "ok", "and I work remotely", "ok"]

    def test_a_forgotten_turn_stays_forgotten_and_the_chat_goes_on(self, chat: ChatEntry) -> None:
        ids = chat.send(HELLO, session_id="s")
        chat.memory.update(ids[2], importance=0.01, user_id=chat.user_id)
        assert [f.id for f in chat.memory.forget(threshold=0.1, user_id=chat.user_id).forgotten] == [ids[2]]
        again = chat.send([*HELLO, *LATER], session_id="s")
        assert ids[2] not in again and again[:2] == ids[:2] and again[2] == ids[3]
        assert texts(chat, "s") == ["hi", "ok", "ok", "and I work remotely", "ok"]
        assert [t.id for t in turns(chat, "s", deleted=True)][2] == ids[2]

    def test_a_removed_turn_is_not_stored_again(self, chat: ChatEntry) -> None:
        pin = [said("my PIN is 4711"), reply("noted"), said("thanks")]
        ids = chat.send(pin, session_id="bank")
        chat.memory.remove(ids[0], user_id=chat.user_id)
        assert chat.send(pin, session_id="bank") == ids[1:]
        assert chat.send([*pin, reply("you're welcome")], session_id="bank")[:2] == ids[1:]
        assert "my PIN is 4711" not in texts(chat, "bank") and len(texts(chat, "bank")) == 3
        last = chat.send([said("new PIN: 0815")], session_id="bank")  # a client that sends only new messages
        chat.memory.remove(last[0], user_id=chat.user_id)
        assert chat.send([said("new PIN: 0815")], session_id="bank") == []  # its retry stores nothing
        assert not {"new PIN: 0815", "my PIN is 4711"} & set(texts(chat, "bank"))

    def test_an_edited_message_replaces_its_turn_in_place(self, chat: ChatEntry) -> None:
        ids = chat.send(HELLO, session_id="s")
        before = turns(chat, "s")
        edited = [said("hello"), *HELLO[1:]]  # the user edits message 1 in the chat
        assert chat.send(edited, session_id="s") == ids
        after = turns(chat, "s")
        assert [t.content for t in after] == ["hello", "ok", "I moved to Lisbon", "ok"]
        assert [(t.id, t.created_at) for t in after] == [(t.id, t.created_at) for t in before]
        events = [h.event for h in chat.memory.history(ids[0], user_id=chat.user_id)]
        assert events == ["add", "update"]

    def test_a_regenerated_reply_replaces_the_last_turn(self, chat: ChatEntry) -> None:
        ids = chat.send(HELLO[:2], session_id="s")
        assert chat.send([HELLO[0], reply("okay!")], session_id="s") == ids
        assert texts(chat, "s") == ["hi", "okay!"]

    def test_messages_with_ids_are_matched_by_them(self, chat: ChatEntry) -> None:
        sent = [said("hi", id="m1"), reply("ok", id="m2"), said("ok", id="m3")]
        ids = chat.send(sent, session_id="s")
        assert len(set(ids)) == 3
        assert chat.send(sent[2:], session_id="s") == ids[2:]  # any subset, in any window
        assert chat.send([sent[1], said("ok!", id="m3"), reply("bye", id="m4")], session_id="s")[:2] == ids[1:]
        assert texts(chat, "s") == ["hi", "ok", "ok!", "bye"]  # m3's new text replaced its turn

    def test_an_edit_of_a_removed_turn_keeps_it_removed_and_the_chat_aligned(self, chat: ChatEntry) -> None:
        history = [*HELLO, *LATER, said("bye")]
        ids = chat.send(history, session_id="s")
        chat.memory.remove(ids[2], user_id=chat.user_id)
        history[2] = said("I moved to Porto")  # edited in the chat, after the removal
        chat.send(history, session_id="s")
        history[4] = said("and I work from home")  # another edit, later
        chat.send(history, session_id="s")
        assert texts(chat, "s") == ["hi", "ok", "ok", "and I work from home", "ok", "bye"]
