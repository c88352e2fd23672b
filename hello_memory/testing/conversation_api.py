"""Behavioural contract of ``MemoryAPI.add`` given a conversation (a list of chat messages).

``MemoryManager`` (embedded and server mode) and ``RemoteMemory`` pass it. Subclass
:class:`ConversationContract` with a ``memory`` fixture as for
:class:`~hello_memory.testing.memory_api.MemoryAPIContract`: an implementation whose default user has
no memories yet, with the episodic tier enabled and ``Settings(embedder="tfidf")``.

Example:
    >>> class TestMine(ConversationContract):                       # doctest: +SKIP
    ...     @pytest.fixture
    ...     def memory(self, tmp_path):
    ...         with MemoryManager(Settings(home=tmp_path, embedder="tfidf")) as mm:
    ...             yield mm
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from hello_memory.api import MemoryAPI
from hello_memory.errors import InvalidInputError
from hello_memory.models import MemoryItem, MemoryType

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
MS = timedelta(milliseconds=1)
CHAT: list[dict[str, Any]] = [
    {"role": "user", "name": "Caroline", "content": "Any tips for my trip to Portugal next month?"},
    {"role": "assistant", "content": "Try the pastel de nata at the bakery near the river."},
    {"role": "user", "name": "Caroline", "content": "Great, I love custard tarts!"},
]
_GOOD = {"role": "user", "content": "hello there"}
#: ``(messages, extra add arguments)`` that ``add`` must refuse whole.
BAD_CALLS: list[tuple[Any, dict[str, Any]]] = [
    ([], {}),
    (CHAT, {"session_id": None}),
    ([_GOOD, {"content": "no role"}], {}),
    ([_GOOD, {"role": "assistant", "content": None}], {}),
    ([_GOOD, {"role": "assistant", "content": "   "}], {}),
    ([_GOOD, {"role": "assistant", "content": "", "tool_calls": []}], {}),
    ([_GOOD, {"role": "assistant", "content": "hi", "tool_calls": []}], {}),
    ([_GOOD, "just a string"], {}),
    ([_GOOD, {"role": "user", "name": " ", "content": "blank name"}], {}),
    ([_GOOD, {"role": "user", "content": "when?", "created_at": "yesterday"}], {}),
    ([_GOOD, {"role": "user", "content": "odd id", "memory_id": "42"}], {}),
    (CHAT, {"memory_type": "semantic"}),
    (CHAT, {"participants": ["Melanie"]}),
    (CHAT, {"event_type": "note"}),
    (CHAT, {"memory_id": str(uuid.uuid4())}),
    (CHAT, {"importance": 1.5}),
]


#: The namespace of the turn ids ``add(messages)`` derived before they were keyed (public, hence guessable).
LEGACY_TURN_NAMESPACE = uuid.UUID("7d0e6f55-3c2a-5b8e-9f61-2b4c8a1d0e73")


def legacy_turn_id(user_id: str, session_id: str, message: dict[str, Any], occurrence: int = 1) -> str:
    """The id a message's turn got before ids were keyed: anyone could compute it (the attack tests use it)."""
    key = [message["role"], message.get("name"), message["content"], message.get("created_at")]
    return str(uuid.uuid5(LEGACY_TURN_NAMESPACE, json.dumps([user_id, session_id, *key, occurrence],
                                                          ensure_ascii=False)))


def _other() -> str:
    return f"other-{uuid.uuid4().hex[:10]}"


class ConversationContract:
    """Tests every ``MemoryAPI`` passes with conversations; needs a ``memory`` fixture (module docstring)."""

    def test_messages_are_stored_as_turns_of_their_session(self, memory: MemoryAPI) -> None:
        turns = memory.add(CHAT, session_id="trip", created_at=T0, importance=0.7, metadata={"app": "chat"})
        assert isinstance(turns, list) and all(isinstance(t, MemoryItem) for t in turns)
        assert [t.content for t in turns] == [f"Caroline: {CHAT[0]['content']}", CHAT[1]["content"],
                                              f"Caroline: {CHAT[2]['content']}"]  # a name leads its text
        assert [t.participants for t in turns] == [["Caroline"], ["assistant"], ["Caroline"]]
        assert [t.created_at for t in turns] == [T0, T0 + MS, T0 + 2 * MS]  # the order kept
        assert {(t.memory_type, t.session_id, t.event_type, t.importance) for t in turns} == {
            (MemoryType.EPISODIC, "trip", "conversation", 0.7)
        }
        assert all(t.metadata == {"app": "chat"} and t.user_id == memory.user_id for t in turns)
        assert [memory.get(t.id) for t in turns] == turns

    def test_a_message_keeps_its_own_time_and_the_others_follow_the_call(self, memory: MemoryAPI) -> None:
        own = datetime(2023, 5, 7, 9, 0, tzinfo=timezone.utc)
        messages = [{**CHAT[0], "created_at": own}, CHAT[1], {**CHAT[2], "created_at": "2023-05-09T08:00:00"}]
        turns = memory.add(messages, session_id="trip", created_at=T0)
        assert [t.created_at for t in turns] == [own, T0 + MS, datetime(2023, 5, 9, 8, tzinfo=timezone.utc)]
        before = datetime.now(timezone.utc)
        later = memory.add([{"role": "user", "content": "and now?"}], session_id="trip")
        assert later[0].created_at >= before - timedelta(seconds=5)

    def test_search_finds_a_turn_through_the_turns_around_it(self, memory: MemoryAPI) -> None:
        # The reply names neither Portugal nor the trip: its neighbours in the session do.
        turns = memory.add(CHAT, session_id="trip", created_at=T0)
        plain = _other()
        for message in CHAT:
            memory.add(message["content"], memory_type="episodic", user_id=plain, created_at=T0)
        query = "what should I eat on the Portugal trip"
        # on its own evidence (below_floor 0), not only ranked after the memories that have some
        found = [h.item.id for h in memory.search(query, memory_types=["episodic"]) if not h.breakdown["below_floor"]]
        assert turns[1].id in found
        alone = memory.search(query, user_id=plain)
        assert CHAT[1]["content"] not in [h.item.content for h in alone if not h.breakdown["below_floor"]]

    def test_the_same_call_again_stores_nothing_twice(self, memory: MemoryAPI) -> None:
        first = memory.add(CHAT, session_id="trip")
        again = memory.add(CHAT, session_id="trip")
        assert [t.id for t in again] == [t.id for t in first] and again == first
        longer = memory.add([*CHAT, {"role": "assistant", "content": "Enjoy Lisbon!"}], session_id="trip")
        assert [t.id for t in longer[:3]] == [t.id for t in first] and longer[:3] == first
        assert len(memory.get_all()) == 4
        elsewhere = memory.add(CHAT, session_id="another trip")
        someone = memory.add(CHAT, session_id="trip", user_id=_other())
        assert not {t.id for t in elsewhere + someone} & {t.id for t in first}

    def test_equal_messages_are_separate_turns_and_ids_can_be_given(self, memory: MemoryAPI) -> None:
        mid = str(uuid.uuid4())
        ok = {"role": "user", "content": "ok"}
        turns = memory.add([ok, {"role": "assistant", "content": "ok"}, ok, {**ok, "memory_id": mid}],
                           session_id="s")
        assert len({t.id for t in turns}) == 4 and turns[3].id == mid
        with pytest.raises(InvalidInputError):  # one id twice in one call
            memory.add([{**ok, "memory_id": mid}, {"role": "user", "content": "no", "memory_id": mid}],
                       session_id="s2")
        assert len(memory.get_all()) == 4

    @pytest.mark.parametrize(("messages", "extra"), BAD_CALLS)
    def test_a_bad_message_list_is_refused_and_nothing_is_stored(
        self, memory: MemoryAPI, messages: Any, extra: dict[str, Any]
    ) -> None:
        with pytest.raises(InvalidInputError):
            memory.add(messages, **{"session_id": "trip", **extra})
        assert memory.get_all(include_deleted=True) == []
