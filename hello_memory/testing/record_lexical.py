"""Lexical-search contract of record stores (part of :class:`~.record_store.RecordStoreContract`).

Ranking sanity in English and Chinese, scoping and filters, and the session context window. How
closely two backends rank the same corpus is a congruence check, :func:`top_k_overlap`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from hello_memory.language.text import lexical_tokens
from hello_memory.models import MemoryItem
from hello_memory.stores.records.base import RecordStore, RecordWrite
from hello_memory.stores.records.sqlite_lexical import TURN_EVENT_TYPE

_USER, _OTHER = "user-alice", "user-bob"
_T0 = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)

ENGLISH = (
    "I went hiking in the mountains last weekend",
    "My sister adopted a golden retriever puppy",
    "We cooked lasagna for the whole family on Sunday",
    "The quarterly budget review is due on Friday",
    "I started learning to play the violin",
    "The mountain cabin had no internet at all",
    "Our team shipped the new billing service",
    "I prefer green tea over coffee in the morning",
)
CHINESE = (
    "我周末喜欢去爬山，呼吸新鲜空气",
    "妹妹领养了一只金毛小狗",
    "星期天我们给全家做了千层面",
    "季度预算评审周五截止",
    "我开始学习拉小提琴",
    "早上我更喜欢喝绿茶而不是咖啡",
)


def _item(content: str, i: int, **fields: Any) -> MemoryItem:
    at = _T0 + timedelta(minutes=i)
    fields.setdefault("user_id", _USER)
    fields.setdefault("memory_type", "episodic")
    if fields["memory_type"] == "episodic" and fields.get("session_id") is not None:
        fields.setdefault("event_type", TURN_EVENT_TYPE)  # a conversation turn unless told otherwise
    return MemoryItem(content=content, created_at=at, updated_at=at, **fields)


def load(store: RecordStore, texts: Sequence[str], **fields: Any) -> list[MemoryItem]:
    """Store ``texts`` as memories one minute apart; returns them in order."""
    items = [_item(t, i, **fields) for i, t in enumerate(texts)]
    store.apply([RecordWrite(it) for it in items])
    return items


def search(store: RecordStore, query: str, limit: int = 10, **kwargs: Any) -> list[str]:
    """Ids of a lexical search for ``query``, best first."""
    found = store.lexical_search(
        _USER, lexical_tokens(query), types=kwargs.pop("types", None), limit=limit, **kwargs
    )
    assert all(s > 0 for s in found.values()), "lexical scores are positive (higher is better)"
    return sorted(found, key=lambda k: -found[k])


def top_k_overlap(a: Mapping[str, float], b: Mapping[str, float], k: int = 5) -> float:
    """Share of the first ``k`` ids of ``a`` that are among the first ``k`` of ``b`` (1.0 when both are empty)."""
    top_a = sorted(a, key=lambda i: (-a[i], i))[:k]
    top_b = set(sorted(b, key=lambda i: (-b[i], i))[:k])
    return 1.0 if not top_a and not top_b else len(set(top_a) & top_b) / max(len(top_a), len(top_b))


class RecordLexicalContract:
    """Lexical-search behaviour every record store shares (needs the ``store``/``stores`` fixtures)."""

    def test_lexical_ranking_english(self, store: RecordStore) -> None:
        items = load(store, ENGLISH)
        assert search(store, "hiking trip to the mountains")[:2] == [items[0].id, items[5].id]
        assert search(store, "hike")[0] == items[0].id  # stemmed: hike ~ hiking
        assert search(store, "Who cooked lasagna?")[0] == items[2].id
        assert search(store, "coffee or tea")[0] == items[7].id
        assert search(store, "the of and") == []  # stop words only: no lexical tokens
        assert search(store, "zebra") == []

    def test_lexical_ranking_chinese(self, store: RecordStore) -> None:
        items = load(store, CHINESE)
        assert search(store, "爬山")[0] == items[0].id
        assert search(store, "他们养了什么狗？")[0] == items[1].id
        assert search(store, "喝绿茶")[0] == items[5].id
        assert search(store, "小提琴课")[0] == items[4].id

    def test_a_rare_term_outranks_a_common_one(self, store: RecordStore) -> None:
        common = [f"meeting notes number {i}" for i in range(8)]
        items = load(store, [*common, "meeting about the zeppelin"])
        ranked = search(store, "meeting zeppelin")
        assert ranked[0] == items[-1].id and len(ranked) == 9

    def test_lexical_search_is_scoped_and_filtered(self, store: RecordStore) -> None:
        mine = load(store, ["alpha project kickoff", "alpha project review"], session_id="s1")
        load(store, ["alpha project secret"], user_id=_OTHER)
        fact = load(store, ["alpha project is owned by Dana"], memory_type="semantic")[0]
        gone = _item("alpha project deleted", 9).model_copy(update={"deleted_at": _T0})
        store.apply([RecordWrite(gone)])
        assert set(search(store, "alpha")) == {mine[0].id, mine[1].id, fact.id}
        assert set(search(store, "alpha", types=["semantic"])) == {fact.id}
        assert set(search(store, "alpha", types=["episodic", "working"])) == {mine[0].id, mine[1].id}
        assert set(search(store, "alpha", session_id="s1")) == {mine[0].id, mine[1].id}
        window = ((_T0 + timedelta(minutes=1)).timestamp(), None)
        assert set(search(store, "alpha", time_range=window)) == {mine[1].id}
        assert len(search(store, "alpha", limit=2)) == 2 and search(store, "alpha", limit=0) == []
        assert store.lexical_search(_USER, [], types=None, limit=5) == {}

    def test_lexical_evidence_is_the_weighted_share_of_query_terms(self, store: RecordStore) -> None:
        both, one, none = load(store, ["dentist appointment tuesday", "dentist visit", "garden party"])
        load(store, ["dentist appointment"], user_id="someone-else")
        ids = [both.id, one.id, none.id, "not-a-memory"]
        ev = store.lexical_evidence(_USER, lexical_tokens("dentist appointment"), ids)
        assert set(ev) <= {both.id, one.id, none.id} and ev.get(none.id, 0.0) == 0.0
        assert ev[both.id] == pytest.approx(1.0) and 0.0 < ev[one.id] < ev[both.id]
        unknown = store.lexical_evidence(_USER, lexical_tokens("dentist quasar"), [both.id])
        assert 0.0 < unknown[both.id] < 0.6  # the unknown term keeps its (high) weight
        assert store.lexical_evidence("someone-else", lexical_tokens("dentist"), [both.id]) == {}
        assert store.lexical_evidence(_USER, [], [both.id]) == {}

    def test_lexical_context_window(self, stores: Callable[..., RecordStore]) -> None:
        turns = [
            "What should we cook for dinner tonight?",
            "Lasagna sounds perfect to me",
            "Then I will buy cheese on the way home",
            "Did you see the match yesterday?",
        ]
        plain, windowed = stores(), stores(context_window=1, name="windowed")
        for store in (plain, windowed):
            items = load(store, turns, session_id="chat-1")
            found = search(store, "cook dinner")
            if store is plain:
                assert found == [items[0].id]
                continue
            assert found[0] == items[0].id and items[1].id in found  # the reply carries the question
            assert items[2].id not in found and items[3].id not in found
            store.delete(_USER, [items[0].id])  # the reply loses its context with the question
            assert search(store, "cook dinner") == []
            assert items[2].id in search(store, "lasagna")  # ... and the next turn gains the reply

    def test_only_conversation_turns_carry_context(self, stores: Callable[..., RecordStore]) -> None:
        store = stores(context_window=1, name="turns")
        (turn,) = load(store, ["Shall we book the dentist appointment?"], session_id="app")
        note = _item("Uploaded the quarterly report", 1, session_id="app", event_type="note")
        store.apply([RecordWrite(note)])
        reply = _item("Yes, Tuesday works", 2, session_id="app")
        store.apply([RecordWrite(reply)])
        found = search(store, "dentist appointment")
        assert note.id not in found  # a note sharing the session is never given the turns' words
        assert set(found) == {turn.id, reply.id}  # the note is no turn's neighbour either
