"""Behavioural contract of :class:`hello_memory.api.MemoryAPI`: one suite, every implementation.

``MemoryManager`` (in process) and ``RemoteMemory`` (through ``hello-memory serve``) both pass it,
which is what "switching is one line" means; so do ``AsyncMemoryManager`` and ``AsyncRemoteMemory``
through :class:`~hello_memory.testing.blocking.BlockingMemory`. Subclass :class:`MemoryAPIContract` in a test module
and provide a ``memory`` fixture: an implementation whose default user has no memories yet, with
all four tiers enabled and a deterministic embedder (``Settings(embedder="tfidf")``).

Example:
    >>> class TestMine(MemoryAPIContract):                          # doctest: +SKIP
    ...     @pytest.fixture
    ...     def memory(self, tmp_path):
    ...         with MemoryManager(Settings(home=tmp_path, embedder="tfidf"),
    ...                            enable_perceptual=True) as mm:
    ...             yield mm
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from hello_memory.api import MemoryAPI
from hello_memory.context import ContextBlock
from hello_memory.errors import IdConflictError, InvalidInputError, NotFoundError
from hello_memory.models import MemoryType

PAST = datetime(2020, 1, 1, tzinfo=timezone.utc)


def _other() -> str:
    return f"other-{uuid.uuid4().hex[:10]}"


class MemoryAPIContract:
    """Tests every ``MemoryAPI`` passes; needs a ``memory`` fixture (see the module docstring)."""

    # -- add / get --------------------------------------------------------------------------
    def test_is_a_memory_api_with_all_tiers(self, memory: MemoryAPI) -> None:
        assert isinstance(memory, MemoryAPI)
        assert set(memory.enabled) == set(MemoryType)
        assert isinstance(memory.user_id, str) and memory.user_id

    def test_add_returns_the_stored_item_whole(self, memory: MemoryAPI) -> None:
        meta: dict[str, Any] = {"source": "chat", "nested": {"list": [1, 2.5, None, "三"]}, "ok": True}
        item = memory.add(
            "我叫张三，是一名 Python 开发者",
            memory_type="episodic",
            importance=0.7,
            session_id="s1",
            metadata=meta,
            event_type="intro",
            tags=["me"],
            participants=["张三"],
            created_at=PAST,
        )
        assert len(item.id) == 36 and item.user_id == memory.user_id
        assert (item.memory_type, item.importance, item.session_id) == (MemoryType.EPISODIC, 0.7, "s1")
        assert item.metadata == meta and item.tags == ["me"] and item.participants == ["张三"]
        assert item.event_type == "intro" and item.created_at == PAST
        assert memory.get(item.id) == item

    def test_a_retry_with_the_same_memory_id_stores_nothing_twice(self, memory: MemoryAPI) -> None:
        mid = str(uuid.uuid4())
        first = memory.add("Bob moved to Lyon", memory_type="episodic", memory_id=mid)
        again = memory.add("Bob moved to Lyon", memory_type="episodic", memory_id=mid)
        assert first.id == again.id == mid and again.content == first.content
        batch = [{"content": "tea at noon", "memory_type": "semantic", "memory_id": str(uuid.uuid4())}]
        assert [m.id for m in memory.add_many(batch)] == [m.id for m in memory.add_many(batch)]
        assert len(memory.get_all()) == 2
        with pytest.raises(IdConflictError) as err:
            memory.add("something else", memory_type="episodic", memory_id=mid)
        assert "Lyon" not in str(err.value)
        with pytest.raises(IdConflictError):  # another user's id: refused, nothing revealed
            memory.add("Bob moved to Lyon", memory_type="episodic", memory_id=mid, user_id=_other())
        assert len(memory.get_all()) == 2

    def test_created_at_accepts_iso_text_and_naive_means_utc(self, memory: MemoryAPI) -> None:
        a = memory.add("from text", memory_type="episodic", created_at="2021-05-03T10:00:00+02:00")
        b = memory.add("naive", memory_type="episodic", created_at=datetime(2021, 5, 3, 8, 0))
        assert a.created_at == b.created_at == datetime(2021, 5, 3, 8, 0, tzinfo=timezone.utc)

    def test_add_many_stores_in_order_and_is_all_or_nothing(self, memory: MemoryAPI) -> None:
        items = memory.add_many(
            [
                {"content": "first", "memory_type": "semantic"},
                {"content": "second", "memory_type": "episodic", "tags": ["t"]},
            ]
        )
        assert [i.content for i in items] == ["first", "second"] and items[1].tags == ["t"]
        with pytest.raises(InvalidInputError):
            memory.add_many([{"content": "good one"}, {"content": "bad", "importance": 3}])
        assert {i.content for i in memory.get_all()} == {"first", "second"}
        assert memory.add_many([]) == []

    def test_get_all_is_newest_first_and_filters(self, memory: MemoryAPI) -> None:
        for n in range(3):
            memory.add(f"event {n}", memory_type="episodic", created_at=PAST + timedelta(days=n))
        memory.add("a fact", memory_type="semantic")
        assert [i.content for i in memory.get_all(memory_type="episodic")] == [
            "event 2",
            "event 1",
            "event 0",
        ]
        assert len(memory.get_all(limit=2)) == 2 and len(memory.get_all()) == 4

    def test_perceptual_and_working_memories(self, memory: MemoryAPI) -> None:
        seen = memory.add("a photo of a cat on a sofa", memory_type="perceptual", modality="image")
        note = memory.add("asking about cats", memory_type="working")
        assert seen.modality is not None and seen.modality.value == "image"
        assert {
            h.item.id for h in memory.search("cat on a sofa", memory_types=["perceptual", "working"])
        } >= {seen.id, note.id}

    # -- search -----------------------------------------------------------------------------
    def test_search_ranks_by_score_with_breakdown(self, memory: MemoryAPI) -> None:
        tea = memory.add("Alice drinks green tea every morning", memory_type="semantic", importance=0.9)
        memory.add("The quarterly report is due on Friday", memory_type="episodic")
        hits = memory.search("what tea does Alice drink", limit=5)
        assert hits[0].item.id == tea.id
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert {"sim", "dense", "lexical", "importance"} <= set(hits[0].breakdown)
        assert len(memory.search("tea", limit=1)) == 1
        assert all(
            h.item.memory_type == MemoryType.EPISODIC for h in memory.search("tea", memory_types=["episodic"])
        )

    def test_search_takes_a_conversation(self, memory: MemoryAPI) -> None:
        pottery = memory.add("I started a pottery class on Monday", memory_type="episodic")
        memory.add("The weather was rainy", memory_type="episodic")
        for convo in (
            [
                {"role": "user", "content": "about my pottery class"},
                {"role": "assistant", "content": "What about the weather?"},
            ],
            [("user", "about my pottery class"), ("assistant", "What about the weather?")],
        ):
            assert memory.search(convo, memory_types=["episodic"])[0].item.id == pottery.id

    def test_search_filters_time_importance_and_session(self, memory: MemoryAPI) -> None:
        old = memory.add(
            "trip to Paris", memory_type="episodic", importance=0.9, created_at=PAST, session_id="a"
        )
        new = memory.add("trip to Rome", memory_type="episodic", importance=0.2, session_id="b")
        window = (PAST - timedelta(days=1), (PAST + timedelta(days=1)).isoformat())
        assert [h.item.id for h in memory.search("trip", time_range=window)] == [old.id]
        assert [h.item.id for h in memory.search("trip", min_importance=0.5)] == [old.id]
        assert [h.item.id for h in memory.search("trip", session_id="b")] == [new.id]
        assert memory.search("trip", reference_time=PAST.isoformat(), limit=2)

    # -- change -----------------------------------------------------------------------------
    def test_update_reembeds_merges_metadata_and_keeps_history(self, memory: MemoryAPI) -> None:
        item = memory.add("likes green tea", memory_type="semantic", metadata={"a": 1})
        changed = memory.update(item.id, content="likes espresso coffee", metadata={"b": 2})
        assert changed.content == "likes espresso coffee" and changed.metadata == {"a": 1, "b": 2}
        assert memory.update(item.id, importance=0.95).importance == 0.95
        assert memory.search("espresso coffee")[0].item.id == item.id
        events = [h.event for h in memory.history(item.id)]
        assert events[0] == "add" and events.count("update") == 2

    def test_remove_deletes_for_good(self, memory: MemoryAPI) -> None:
        item = memory.add("a secret plan", memory_type="episodic")
        memory.remove(item.id)
        with pytest.raises(NotFoundError):
            memory.get(item.id, include_deleted=True)
        assert memory.search("secret plan") == []
        with pytest.raises(NotFoundError):  # its history went with it: the id is unknown, as for get
            memory.history(item.id)
        with pytest.raises(NotFoundError):
            memory.remove(item.id)

    def test_forget_is_restorable_unless_purged(self, memory: MemoryAPI) -> None:
        low = memory.add("unimportant detail", memory_type="episodic", importance=0.05)
        keep = memory.add("important detail", memory_type="episodic", importance=0.9)
        report = memory.forget("importance_based", threshold=0.1)
        assert [f.id for f in report.forgotten] == [low.id] and not report.purged
        with pytest.raises(NotFoundError):
            memory.get(low.id)
        assert memory.get(low.id, include_deleted=True).deleted_at is not None
        assert memory.restore(low.id).deleted_at is None and memory.get(keep.id) == keep
        purged = memory.forget("importance_based", threshold=0.1, purge=True)
        assert purged.purged and purged.count == 1
        with pytest.raises(NotFoundError):
            memory.restore(low.id)

    def test_forget_by_capacity_and_types(self, memory: MemoryAPI) -> None:
        for n in range(4):
            memory.add(f"note {n}", memory_type="episodic", importance=0.1 * (n + 1))
        memory.add("a fact", memory_type="semantic", importance=0.1)
        report = memory.forget("capacity_based", capacity=2, memory_types=["episodic"])
        assert report.count == 2 and len(memory.get_all(memory_type="episodic")) == 2
        assert len(memory.get_all(memory_type="semantic")) == 1

    def test_consolidate_promotes_important_working_memories(self, memory: MemoryAPI) -> None:
        memory.add("the user is learning Rust", memory_type="working", importance=0.9)
        memory.add("small talk", memory_type="working", importance=0.2)
        report = memory.consolidate("working", "episodic", 0.7)
        assert report.count == 1 and len(report.promoted) == 1
        assert [i.content for i in memory.get_all(memory_type="episodic")] == ["the user is learning Rust"]

    def test_clear_all_and_forget_user_touch_one_user(self, memory: MemoryAPI) -> None:
        other = _other()
        memory.add("mine", memory_type="semantic")
        memory.add("theirs", memory_type="semantic", user_id=other)
        assert memory.clear_all() == 1 and memory.get_all() == []
        assert [i.content for i in memory.get_all(user_id=other)] == ["theirs"]
        counts = memory.forget_user(other)
        deleted = counts["records:memories"]  # the same key in both modes
        assert deleted == 1 and memory.get_all(user_id=other) == []

    # -- reports ----------------------------------------------------------------------------
    def test_stats_summary_and_context(self, memory: MemoryAPI) -> None:
        memory.add("Zhang San is a Python developer", memory_type="semantic", importance=0.9)
        gone = memory.add("an old event", memory_type="episodic", importance=0.05)
        memory.forget(threshold=0.1)
        st = memory.stats()
        assert (st.user_id, st.total, st.deleted) == (memory.user_id, 1, 1) and st.by_type["semantic"] == 1
        assert "Zhang San is a Python developer" in memory.summary(limit=3)
        block = memory.build_context("who is Zhang San?", budget_tokens=200)
        assert isinstance(block, ContextBlock) and block.position == "user" and block.tokens <= 200
        assert "Zhang San is a Python developer" in block.text and gone.id not in block.text
        assert block.messages()[0]["role"] == "user"
        assert memory.build_context("who is Zhang San?", budget_tokens=1).hits == []

    # -- errors and isolation -----------------------------------------------------------------
    @pytest.mark.parametrize(
        ("kwargs", "field"),
        [
            ({"content": ""}, "content"),
            ({"content": "x", "importance": 1.5}, "importance"),
            ({"content": "x", "importance": "high"}, "importance"),
            ({"content": "x", "memory_type": "dream"}, "memory_type"),
        ],
    )
    def test_bad_input_is_an_invalid_input_error_and_stores_nothing(
        self, memory: MemoryAPI, kwargs: dict[str, Any], field: str
    ) -> None:
        args = dict(kwargs)
        content = args.pop("content")
        with pytest.raises(InvalidInputError) as err:
            memory.add(content, **args)
        assert field in str(err.value)  # the message names the argument
        assert memory.get_all() == []

    def test_bad_arguments_of_reads(self, memory: MemoryAPI) -> None:
        for call in (
            lambda: memory.search("x", limit=0),
            lambda: memory.search("", limit=3),
            lambda: memory.build_context("x", position="middle"),
            lambda: memory.get_all(limit=0),
            lambda: memory.forget("whenever"),
        ):
            with pytest.raises(InvalidInputError):
                call()

    def test_unknown_ids_and_other_users_ids_are_not_found(self, memory: MemoryAPI) -> None:
        theirs = memory.add("their diary", memory_type="episodic", user_id=_other())
        missing = str(uuid.uuid4())
        for memory_id in (missing, theirs.id):
            with pytest.raises(NotFoundError) as err:
                memory.get(memory_id)
            assert err.value.object_id == memory_id and memory_id in str(err.value)
            for call in (
                lambda i=memory_id: memory.update(i, content="mine now"),
                lambda i=memory_id: memory.remove(i),
                lambda i=memory_id: memory.restore(i),
                lambda i=memory_id: memory.history(i),
            ):
                with pytest.raises(NotFoundError):
                    call()
        assert memory.search("their diary") == []
        assert memory.get(theirs.id, user_id=theirs.user_id) == theirs


def differential_script(memory: MemoryAPI) -> list[object]:
    """The same calls on any implementation, and what they return (ids and times left out).

    Two implementations over fresh stores give equal lists (a congruence test): BM25 statistics
    span every user of a store, so each needs a store of its own.
    """
    texts = [("我叫张三，是一名 Python 开发者", "semantic", 0.9), ("张三住在杭州，喜欢喝龙井茶", "semantic", 0.7),
             ("Zhang San finished the RAG chapter", "episodic", 0.8), ("Went hiking with Li Si", "episodic", 0.4),
             ("asking how to add long-term memory", "working", 0.75)]
    memory.add_many([{"content": c, "memory_type": t, "importance": i, "created_at": PAST} for c, t, i in texts])
    out: list[object] = []
    for query in ("张三是做什么的？", "what did Zhang San study?", "hiking", "memory"):
        hits = [(-round(h.score, 9), h.item.content, sorted(h.breakdown.items())) for h in memory.search(query)]
        out.append(sorted(hits))  # equal scores of equally old memories are ordered by their random ids
    out.append(memory.consolidate("working", "episodic", 0.7).count)
    out.append(memory.build_context("张三的学习进度", budget_tokens=120).text)
    st = memory.stats()
    out.append((st.total, st.by_type, st.entities, st.relations, st.avg_importance, st.embedder))
    return out
