"""Conversation queries: ``MemoryManager.search`` given the messages of a dialogue."""

from __future__ import annotations

from pathlib import Path

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.errors import InvalidInputError
from hello_memory.language.queries import conversation_query
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder


def test_human_turns_only_in_order_without_role_markup() -> None:
    q = conversation_query([
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "我下周去杭州"},
        {"role": "assistant", "content": "听起来不错！去做什么？"},
        ("Lisa", "看西湖"),
        {"role": "assistant", "content": None, "tool_calls": []},
    ])
    assert q == "我下周去杭州\n看西湖"


def test_an_assistant_only_conversation_still_gives_a_query() -> None:
    assert conversation_query([{"role": "assistant", "content": "Welcome back!"}]) == "Welcome back!"


def test_long_conversations_keep_the_newest_turns() -> None:
    msgs = [{"role": "user", "content": f"turn {i} " + "x" * 90} for i in range(500)]
    q = conversation_query(msgs, max_chars=1_000)
    assert len(q) <= 1_000
    assert q.endswith(msgs[-1]["content"]) and "turn 499" in q and "turn 0 " not in q


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ("", "string or a list"),
        ({"role": "user", "content": "hi"}, "string or a list"),
        ([{"content": "no role"}], "no role"),
        ([{"role": "user", "content": 42}], "content must be text"),
        (["just a string"], "mapping or a (role, content) pair"),
        ([{"role": "user", "content": "   "}], "no text"),
        ([], "no text"),
    ],
)
def test_malformed_messages_get_a_clear_error(messages: object, fragment: str) -> None:
    with pytest.raises(InvalidInputError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        conversation_query(messages)  # type: ignore[arg-type]


def test_search_with_messages_ranks_what_the_user_talked_about(tmp_path: Path) -> None:
    with MemoryManager(Settings(home=tmp_path), user_id="u", embedder=DeterministicFakeEmbedder(32)) as mm:
        pottery = mm.add("Took a pottery class and made a bowl", memory_type="episodic")
        mm.add("Renewed the car insurance", memory_type="episodic")
        hits = mm.search([
            {"role": "user", "content": "I want to make another bowl at the pottery class"},
            {"role": "assistant", "content": "What about your car insurance renewal?"},
        ], memory_types=["episodic"], limit=1)
        assert [h.item.id for h in hits] == [pottery.id]
        with pytest.raises(InvalidInputError):
            mm.search([{"role": "user"}])

