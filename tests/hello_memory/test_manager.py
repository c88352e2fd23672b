"""MemoryManager lifecycle across all stores, restarts, isolation and bad input."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.errors import (
    CorruptStoreError,
    EmbeddingError,
    HelloMemoryError,
    InvalidInputError,
    NotFoundError,
)
from hello_memory.models import MemoryType


def reopen(mm: MemoryManager, **kw) -> MemoryManager:
    settings, embedder = mm.settings, mm.embedder
    mm.close()
    return MemoryManager(
        settings, user_id=kw.pop("user_id", mm.user_id), enable_perceptual=True, embedder=embedder, **kw
    )


def test_add_returns_full_uuid_and_persists_across_restart(manager):
    item = manager.add(
        "Alice prefers green tea",
        memory_type="semantic",
        importance=0.8,
        metadata={"source": "chat", "nested": {"a": [1, 2]}},
    )
    assert len(item.id) == 36 and item.id.count("-") == 4
    mm = reopen(manager)
    try:
        got = mm.get(item.id)
        assert got.content == "Alice prefers green tea"
        assert got.metadata == {"source": "chat", "nested": {"a": [1, 2]}}
        assert got.importance == 0.8
        hits = mm.search("Alice prefers green tea", memory_types=["semantic"])
        assert hits[0].item.id == item.id
    finally:
        mm.close()


def test_search_merges_tiers_by_final_score_with_breakdown(manager):
    manager.add("我喜欢喝咖啡", memory_type="episodic", importance=0.5)
    manager.add("我喜欢喝咖啡", memory_type="semantic", importance=0.9)
    manager.add("今天下雨了", memory_type="working")
    hits = manager.search("我喜欢喝咖啡", limit=5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    types = {h.item.memory_type for h in hits}
    assert {MemoryType.EPISODIC, MemoryType.SEMANTIC} <= types
    for h in hits:
        assert {"sim", "importance", "importance_weight"} <= set(h.breakdown)


def test_search_refreshes_access(manager):
    item = manager.add("remember the milk", memory_type="episodic")
    manager.search("remember the milk")
    got = manager.get(item.id)
    assert got.access_count == 1 and got.last_accessed_at is not None


def test_episodic_prefilters_time_session_importance(manager):
    old = datetime(2024, 1, 1, tzinfo=timezone.utc)
    a = manager.add("trip to Paris", memory_type="episodic", created_at=old, session_id="s1", importance=0.9)
    b = manager.add("trip to Paris", memory_type="episodic", session_id="s2", importance=0.2)
    ids = {h.item.id for h in manager.search("trip to Paris", session_id="s1")}
    assert ids == {a.id}
    ids = {h.item.id for h in manager.search("trip to Paris", time_range=(None, old + timedelta(days=1)))}
    assert ids == {a.id}
    ids = {h.item.id for h in manager.search("trip to Paris", min_importance=0.5)}
    assert b.id not in ids and a.id in ids


def test_recency_ranks_recent_event_first_when_similarity_equal(manager):
    old = manager.add(
        "team meeting", memory_type="episodic", created_at=datetime(2020, 1, 1, tzinfo=timezone.utc)
    )
    new = manager.add("team meeting", memory_type="episodic")
    hits = manager.search("team meeting", memory_types=["episodic"])
    assert [h.item.id for h in hits[:2]] == [new.id, old.id]
    assert hits[1].breakdown["recency"] == pytest.approx(0.1)


def test_update_reembeds_and_records_history(manager):
    item = manager.add("likes cats", memory_type="episodic")
    manager.update(item.id, content="likes dogs", importance=0.9, metadata={"k": 1})
    assert manager.search("likes dogs")[0].item.id == item.id
    assert all(h.item.id != item.id for h in manager.search("likes cats", min_score=0.9))
    events = [h.event for h in manager.history(item.id)]
    assert events == ["add", "update"]
    hist = manager.history(item.id)[1]
    assert hist.old["content"] == "likes cats" and hist.new["content"] == "likes dogs"


def test_remove_deletes_everywhere(manager):
    item = manager.add("张三住在北京", memory_type="semantic")
    manager.remove(item.id)
    with pytest.raises(NotFoundError):
        manager.get(item.id)
    b = manager.bundle
    assert b.vectors.count("memories") == 0
    assert b.records.residue("alice") == {"memories": 0, "history": 0, "pending": 0, "facts": 0, "lexical": 0,
                                          "tombstones": 0}
    assert b.graph.counts("alice")["entities"] == 0
    with pytest.raises(NotFoundError):  # its history went with it (history of an id the user does not hold)
        manager.history(item.id)


def test_forget_soft_delete_and_restore(manager):
    low = manager.add("unimportant", memory_type="episodic", importance=0.05)
    keep = manager.add("important", memory_type="episodic", importance=0.9)
    report = manager.forget("importance_based", threshold=0.1)
    assert [f.id for f in report.forgotten] == [low.id]
    assert manager.search("unimportant", min_score=0.5) == [] or all(
        h.item.id != low.id for h in manager.search("unimportant")
    )
    restored = manager.restore(low.id)
    assert restored.deleted_at is None
    assert manager.search("unimportant")[0].item.id == low.id
    assert keep.id in {i.id for i in manager.get_all()}


def test_forget_time_and_capacity(manager):
    old = manager.add(
        "old news", memory_type="episodic", created_at=datetime(2020, 1, 1, tzinfo=timezone.utc)
    )
    manager.add("new news", memory_type="episodic")
    rep = manager.forget("time_based", max_age_days=30)
    assert [f.id for f in rep.forgotten] == [old.id]
    for i in range(5):
        manager.add(f"fact {i}", memory_type="semantic", importance=i / 10)
    rep = manager.forget("capacity_based", capacity=3, memory_types=["semantic"], purge=True)
    assert rep.count == 2 and rep.purged
    assert manager.stats().by_type["semantic"] == 3


def test_consolidate_working_to_episodic_atomic_and_dedup(manager):
    hi = manager.add("user is learning Rust", memory_type="working", importance=0.8)
    manager.add("small talk", memory_type="working", importance=0.3)
    rep = manager.consolidate("working", "episodic", 0.7)
    assert rep.source_ids == [hi.id] and len(rep.promoted) == 1
    promoted = manager.get(rep.promoted[0])
    assert promoted.memory_type == MemoryType.EPISODIC
    assert promoted.metadata["consolidated_from"] == hi.id
    with pytest.raises(NotFoundError):
        manager.get(hi.id)
    manager.add("user is learning Rust", memory_type="working", importance=0.9)
    rep2 = manager.consolidate("working", "episodic", 0.7)
    assert rep2.promoted == [] and len(rep2.merged) == 1
    assert manager.stats().by_type["episodic"] == 1


def test_consolidate_failure_leaves_source_intact(tmp_path, monkeypatch):
    from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder, FailingEmbedder

    fake = DeterministicFakeEmbedder(32)
    mm = MemoryManager(Settings(home=tmp_path), user_id="u", embedder=fake)
    src = mm.add("keep me", memory_type="working", importance=0.9)
    monkeypatch.setattr(fake, "embed", FailingEmbedder().embed)
    with pytest.raises(EmbeddingError):
        mm.consolidate("working", "episodic", 0.7)
    assert mm.get(src.id).content == "keep me"
    assert mm.stats().by_type["episodic"] == 0
    mm.close()


def test_semantic_supersession_keeps_history(manager):
    old = manager.add("张三住在北京", memory_type="semantic")
    new = manager.add("张三住在上海", memory_type="semantic")
    got_old = manager.get(old.id)
    assert got_old.valid_to is not None and got_old.superseded_by == new.id
    hits = manager.search("张三住在哪里", memory_types=["semantic"])
    ids = [h.item.id for h in hits]
    assert ids.index(new.id) < ids.index(old.id)


def test_semantic_graph_score_reaches_related_memory(manager):
    a = manager.add("Alice works at Acme Corp", memory_type="semantic")
    hits = manager.search("Acme Corp", memory_types=["semantic"])
    top = next(h for h in hits if h.item.id == a.id)
    assert top.breakdown["graph"] > 0


def test_perceptual_modality_and_collection(manager, tmp_path):
    img = tmp_path / "cat.jpg"
    img.write_bytes(b"\xff\xd8\xff fake jpeg")
    item = manager.add("a photo of a cat on a sofa", memory_type="perceptual", source_path=str(img))
    assert item.modality.value == "image" and item.media_hash
    assert "perceptual_image" in manager.bundle.vectors.collections()
    assert manager.search("a photo of a cat on a sofa", memory_types=["perceptual"])[0].item.id == item.id


def test_working_capacity_and_ttl(tmp_path, fake_embedder):
    mm = MemoryManager(Settings(home=tmp_path, working_capacity=3), user_id="u", embedder=fake_embedder)
    for i in range(5):
        mm.add(f"note {i}", importance=i / 10)
    assert mm.stats().by_type["working"] == 3
    kept = {i.content for i in mm.get_all(memory_type="working")}
    assert kept == {"note 2", "note 3", "note 4"}
    old = datetime.now(timezone.utc) - timedelta(hours=2)
    mm.add("stale", created_at=old, importance=1.0)
    assert "stale" not in {i.content for i in mm.get_all(memory_type="working")}
    mm.close()


def test_users_are_isolated(manager):
    a = manager.add("alice secret", memory_type="episodic")
    b = manager.add("bob secret", memory_type="episodic", user_id="bob")
    assert {h.item.user_id for h in manager.search("secret")} == {"alice"}
    with pytest.raises(NotFoundError):
        manager.get(b.id)
    with pytest.raises(NotFoundError):
        manager.update(b.id, content="hacked")
    with pytest.raises(NotFoundError):
        manager.remove(b.id)
    assert manager.clear_all() == 1
    assert manager.get(b.id, user_id="bob").content == "bob secret"
    with pytest.raises(NotFoundError):
        manager.get(a.id)
    counts = manager.forget_user("bob")
    assert counts["records:memories"] == 1 and counts["vectors:memories"] == 1
    assert manager.bundle.records.residue("bob") == {
        k: 0 for k in ("memories", "history", "pending", "facts", "lexical", "tombstones")
    }


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "   \n"}, "content"),
        ({"content": b"bytes"}, "content"),
        ({"content": "x" * 10_000_001}, "content"),
        ({"content": "bad \udcff surrogate"}, "content"),
        ({"content": "ok", "importance": 1.5}, "importance"),
        ({"content": "ok", "importance": -0.1}, "importance"),
        ({"content": "ok", "importance": math.nan}, "importance"),
        ({"content": "ok", "importance": math.inf}, "importance"),
        ({"content": "ok", "importance": "high"}, "importance"),
        ({"content": "ok", "memory_type": "procedural"}, "memory_type"),
        ({"content": "ok", "metadata": {"x": object()}}, "metadata"),
        ({"content": "ok", "metadata": ["not", "dict"]}, "metadata"),
        ({"content": "ok", "user_id": ""}, "user_id"),
        ({"content": "ok", "created_at": "yesterday"}, "created_at"),
    ],
)
def test_bad_input_is_a_clear_error_and_stores_nothing(manager, kwargs, field):
    content = kwargs.pop("content")
    with pytest.raises(InvalidInputError) as err:
        manager.add(content, **kwargs)
    assert isinstance(err.value, HelloMemoryError)
    if err.value.field:
        assert err.value.field == field
    assert manager.stats().total == 0
    assert manager.bundle.records.pending() == []


def test_add_many_is_all_or_nothing(manager):
    with pytest.raises(InvalidInputError):
        manager.add_many(
            [{"content": "fine", "memory_type": "episodic"}, {"content": "", "memory_type": "episodic"}]
        )
    assert manager.stats().total == 0
    items = manager.add_many(
        [{"content": f"turn {i}", "memory_type": "episodic", "metadata": {"doc_id": i}} for i in range(40)]
    )
    assert len(items) == 40 and manager.stats().by_type["episodic"] == 40
    assert manager.bundle.vectors.count("memories") == 40


def test_embedding_failure_stores_nothing(tmp_path):
    from hello_memory.testing.fake_embedder import FailingEmbedder

    mm = MemoryManager(Settings(home=tmp_path), user_id="u", embedder=FailingEmbedder())
    with pytest.raises(EmbeddingError):
        mm.add("will fail", memory_type="episodic")
    assert mm.stats().total == 0
    mm.close()


def test_absent_ids_and_unknown_users(manager):
    with pytest.raises(NotFoundError):
        manager.get("00000000-0000-0000-0000-000000000000")
    with pytest.raises(NotFoundError):
        manager.update("nope", content="x")
    assert manager.search("anything", user_id="nobody") == []
    assert manager.stats(user_id="nobody").total == 0


def test_corrupt_sqlite_file_is_a_clear_error(tmp_path, fake_embedder):
    home = tmp_path / "d"
    home.mkdir()
    (home / "records.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(CorruptStoreError, match=r"records\.db"):
        MemoryManager(Settings(home=home), embedder=fake_embedder)


def test_dimension_mismatch_names_both_numbers(tmp_path):
    from hello_memory.errors import DimensionMismatchError, EmbedderMismatchError
    from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

    mm = MemoryManager(Settings(home=tmp_path), embedder=DeterministicFakeEmbedder(32))
    mm.add("x", memory_type="episodic")
    mm.close()
    mm = MemoryManager(Settings(home=tmp_path), embedder=DeterministicFakeEmbedder(48))
    with pytest.raises((DimensionMismatchError, EmbedderMismatchError)) as err:
        mm.add("y", memory_type="episodic")
    assert "32" in str(err.value) and "48" in str(err.value)
    assert mm.stats().total == 1
    mm.close()


def test_data_dir_locked_by_another_process(tmp_path):
    import subprocess
    import sys

    from hello_memory.errors import StoreLockedError
    from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

    mm = MemoryManager(Settings(home=tmp_path), embedder=DeterministicFakeEmbedder(32))
    code = (
        "import sys\nfrom hello_memory import MemoryManager, Settings\n"
        "from hello_memory.errors import StoreLockedError\n"
        f"try:\n    MemoryManager(Settings(home={str(tmp_path)!r}))\nexcept StoreLockedError as e:\n"
        "    print('LOCKED', e); sys.exit(3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert "in use by another process" in proc.stdout
    mm.close()
    assert StoreLockedError


def test_two_managers_in_one_process_share_the_directory(tmp_path, fake_embedder):
    a = MemoryManager(Settings(home=tmp_path), user_id="u", embedder=fake_embedder)
    b = MemoryManager(Settings(home=tmp_path), user_id="u", embedder=fake_embedder)
    item = a.add("shared", memory_type="episodic")
    assert b.get(item.id).content == "shared"
    a.close()
    assert b.search("shared")[0].item.id == item.id
    b.close()


def test_build_context_budget_and_labels(manager):
    for i in range(10):
        manager.add(f"fact number {i} about tea", memory_type="semantic")
    block = manager.build_context("tea", budget_tokens=60, position="user")
    assert block.tokens <= 60
    assert block.dropped > 0
    assert "[semantic memory," in block.text
    assert block.messages()[0]["role"] == "user"
    empty = manager.build_context("zzz unrelated", budget_tokens=60, floor=5.0)
    assert empty.messages() == []


def test_closed_manager_refuses(tmp_path, fake_embedder):
    mm = MemoryManager(Settings(home=tmp_path), embedder=fake_embedder)
    mm.close()
    mm.close()
    with pytest.raises(InvalidInputError, match="closed"):
        mm.add("x")


def test_recovery_completes_pending_index_on_open(tmp_path, fake_embedder):
    mm = MemoryManager(Settings(home=tmp_path), user_id="u", embedder=fake_embedder)
    item = mm.add("survives a crash", memory_type="episodic")
    # simulate a crash after the SQLite commit but before the vector write
    mm.bundle.vectors.delete("memories", [item.id])
    with mm.bundle.records.transaction() as conn:
        mm.bundle.records.add_pending(conn, item.id, "u", "index", 0.0)
    mm.close()
    mm = MemoryManager(Settings(home=tmp_path), user_id="u", embedder=fake_embedder)
    assert mm.bundle.records.pending() == []
    assert mm.search("survives a crash")[0].item.id == item.id
    mm.close()


def test_import_is_light():
    import subprocess
    import sys

    code = (
        "import sys, time; t=time.time(); import hello_memory; from hello_memory import MemoryManager; "
        "print(time.time()-t); bad=[m for m in ('torch','markitdown','gradio','sentence_transformers','rag',"
        "'tools') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    ).stdout.split()
    assert out[-1] == "[]"


def test_long_query_with_unknown_terms_still_matches_lexically(manager):
    item = manager.add("我们在杭州西湖边喝了龙井茶", memory_type="episodic")
    noise = " ".join(f"unseenterm{i}" for i in range(40))
    hits = manager.search(f"{noise} 龙井茶", memory_types=["episodic"])
    assert hits and hits[0].item.id == item.id and hits[0].breakdown["lexical"] > 0


def test_equal_scores_rank_the_newer_memory_first(tmp_path, fake_embedder):
    old_day, new_day = datetime(2020, 1, 1, tzinfo=timezone.utc), datetime(2020, 6, 1, tzinfo=timezone.utc)
    with MemoryManager(Settings(home=tmp_path), user_id="u", embedder=fake_embedder) as mm:
        # far in the past: recency is at its 0.1 floor for both, so the two scores tie exactly
        older = mm.add("same words here", memory_type="episodic", created_at=old_day)
        newer = mm.add("same words here", memory_type="episodic", created_at=new_day)
        hits = mm.search("same words here", memory_types=["episodic"], limit=2)
        assert hits[0].score == hits[1].score
        assert [h.item.id for h in hits] == [newer.id, older.id]


def test_type_condition_only_when_a_collection_holds_other_tiers(manager, monkeypatch):
    semantic = manager.add_many([{"content": f"green tea note {i}", "memory_type": "semantic"} for i in range(60)])
    episodic = manager.add_many([{"content": f"green tea note {i}", "memory_type": "episodic"} for i in range(3)])
    seen = []
    search = manager.bundle.vectors.search

    def spy(collection, vector, *, limit, where=None, with_payload=True):
        seen.append((collection, dict(where.equals)))
        assert with_payload is False  # the dense search needs ids and scores only
        return search(collection, vector, limit=limit, where=where, with_payload=with_payload)

    monkeypatch.setattr(manager.bundle.vectors, "search", spy)
    # 60 semantic near-duplicates outnumber the 50 candidates: only a type condition finds the episodic ones.
    hits = manager.search("green tea note", memory_types=["episodic"], limit=3)
    assert {h.item.id for h in hits} == {m.id for m in episodic}
    assert seen[-1] == ("memories", {"user_id": manager.user_id, "memory_type": ["episodic"]})
    hits = manager.search("green tea note", limit=10)
    assert seen[-1] == ("memories", {"user_id": manager.user_id})  # every tier it holds: no condition
    assert {h.item.memory_type for h in hits} <= {MemoryType.EPISODIC, MemoryType.SEMANTIC}
    assert len(hits) == 10 and {h.item.id for h in hits} <= {m.id for m in semantic + episodic}


@pytest.mark.parametrize(
    ("names", "query"),
    [(("Caroline", "Melanie"), "Where did Melanie go hiking on Sunday?"), (("小明", "小红"), "小红周日去哪里爬山了？")],
)
def test_query_naming_a_participant_prefers_their_memories(tmp_path, fake_embedder, names, query):
    day = datetime(2020, 1, 1, tzinfo=timezone.utc)
    text = "went hiking on Sunday, 周日去爬山"
    for weight in (0.0, 0.1):
        with MemoryManager(
            Settings(home=tmp_path / str(weight), participant_weight=weight), user_id="u", embedder=fake_embedder
        ) as mm:
            # Same text: without the preference the newer memory (the first name's) wins the tie.
            named = mm.add(text, memory_type="episodic", participants=[names[1]], created_at=day)
            other = mm.add(text, memory_type="episodic", participants=[names[0]], created_at=day + timedelta(1))
            hits = mm.search(query, memory_types=["episodic"], limit=2)
            assert [h.item.id for h in hits] == ([named.id, other.id] if weight else [other.id, named.id])
            assert [h.breakdown["participant"] for h in hits] == ([1.0, 0.0] if weight else [0.0, 0.0])


def test_participant_names_match_whole_words_and_survive_a_restart(manager):
    al = manager.add("bought a new bike", memory_type="episodic", participants=[" Al "])
    assert al.participants == ["Al"]  # names are stripped
    manager.add("bought a new bike", memory_type="episodic", participants=["Bob"])
    mm = reopen(manager)
    try:
        assert mm.search("Did Alice buy a bike?", limit=2)[0].breakdown["participant"] == 0.0  # "Al" ⊄ "Alice"
        top = mm.search("Did al buy a bike?", limit=2)[0]
        assert top.item.id == al.id and top.breakdown["participant"] == 1.0
    finally:
        mm.close()


@pytest.mark.parametrize(
    "query", ["What did I cook two weeks ago?", "我两周前做了什么菜？"], ids=["english", "chinese"]
)
def test_query_naming_a_time_prefers_memories_from_then(tmp_path, fake_embedder, query):
    asked = datetime(2024, 6, 14, 12, tzinfo=timezone.utc)
    for weight in (0.0, 0.3):
        with MemoryManager(
            Settings(home=tmp_path / str(weight), time_weight=weight), user_id="u", embedder=fake_embedder
        ) as mm:
            # 60 recent memories that share more of the query's words fill the candidate pool; the
            # curry is drawn in, and ranked first, because the query names the time it was made.
            for i in range(60):
                mm.add(
                    f"cook cooked dinner {i}, 做了菜",
                    memory_type="episodic",
                    created_at=asked - timedelta(hours=i + 1),
                )
            curry = mm.add(
                "cooked a lamb curry, 做了咖喱菜",
                memory_type="episodic",
                created_at=asked - timedelta(days=14),
            )
            hits = mm.search(query, memory_types=["episodic"], limit=5, reference_time=asked)
            ids = [h.item.id for h in hits]
            if weight:
                assert ids[0] == curry.id and hits[0].breakdown["time"] == 1.0
                assert all(h.breakdown["time"] == 0.0 for h in hits[1:])
            else:
                assert curry.id not in ids and all(h.breakdown["time"] == 0.0 for h in hits)


def test_time_named_in_a_memory_counts_and_the_reference_defaults_to_now(manager):
    now = manager._now()
    said = now - timedelta(days=2)
    weekend = manager.add("I tried a mojito recipe last weekend", memory_type="episodic", created_at=said)
    manager.add("I tried a mojito recipe", memory_type="episodic", created_at=said + timedelta(minutes=1))
    # Said two days ago about last weekend: that is "two weekends ago" only if today is a Monday or
    # Tuesday; resolve the query against the day it was said instead.
    top = manager.search("Which mojito recipe did I try last weekend?", limit=2, reference_time=said)[0]
    assert top.item.id == weekend.id and top.breakdown["time"] == 1.0
    # No time in the query, or a time no memory is from: the breakdown stays 0 and nothing moves.
    for q in ("Which mojito recipe did I try?", "Which mojito recipe did I try ten years ago?"):
        assert {h.breakdown["time"] for h in manager.search(q, limit=2)} == {0.0}


@pytest.mark.parametrize("bad", ["yesterday", "2024-13-01", 5])
def test_reference_time_must_be_a_date_time(manager, bad):
    with pytest.raises(InvalidInputError, match="reference_time"):
        manager.search("what did I do yesterday?", reference_time=bad)


def test_time_range_still_excludes_what_a_named_time_would_prefer(manager):
    asked = datetime(2024, 6, 14, 12, tzinfo=timezone.utc)
    old = manager.add("went to the lake", memory_type="episodic", created_at=asked - timedelta(days=7))
    new = manager.add("went to the lake", memory_type="episodic", created_at=asked - timedelta(days=1))
    hits = manager.search(
        "where did I go a week ago?", reference_time=asked, time_range=(asked - timedelta(days=3), None)
    )
    assert [h.item.id for h in hits] == [new.id] and old.id != new.id


@pytest.mark.parametrize(
    ("question", "answer", "filler", "query"),
    [
        ("Any suggestions for our team trip next month?", "Edinburgh would be great, the castle is magical.",
         "the team trip budget is fixed", "Which city did Tim suggest for the team trip?"),
        ("下个月团建，你有什么推荐的地方吗？", "我觉得爱丁堡很合适。", "团建预算已经定了", "Tim推荐团建去哪里？"),
    ],
    ids=["english", "chinese"],
)
def test_an_answer_shares_the_relevance_of_the_question_it_answers(
    tmp_path, fake_embedder, question, answer, filler, query
):
    day = datetime(2023, 5, 1, tzinfo=timezone.utc)
    for weight, answerer in ((0.0, "Tim"), (0.9, "Tim"), (0.9, "John")):
        settings = Settings(
            home=tmp_path / f"{weight}-{answerer}", adjacency_weight=weight, lexical_context_window=0,
            participant_weight=0.0,
        )
        with MemoryManager(settings, user_id="u", embedder=fake_embedder) as mm:
            turns = [("John", question), (answerer, answer)] + [("John", f"{filler} {i}") for i in range(8)]
            q, a, *_ = mm.add_many([
                {"content": text, "participants": [who], "memory_type": "episodic", "session_id": "s1",
                 "created_at": day}
                for who, text in turns
            ])
            hits = {h.item.id: h for h in mm.search(query, memory_types=["episodic"], limit=10)}
            top, reply = hits[q.id].breakdown, hits[a.id].breakdown
            assert max(hits.values(), key=lambda h: h.score).item.id == q.id
            if weight and answerer != "John":  # only another participant's reply answers a question
                assert reply["adjacent"] == 1.0 and reply["sim"] == pytest.approx(0.9 * top["sim"])
                assert sorted(hits.values(), key=lambda h: -h.score)[1].item.id == a.id
            else:
                assert reply["adjacent"] == 0.0 and reply["sim"] < 0.9 * top["sim"]
                assert all(h.breakdown["adjacent"] == 0.0 for h in hits.values())


def test_only_a_turn_that_asks_something_shares_its_relevance(manager):
    day = datetime(2023, 5, 1, tzinfo=timezone.utc)
    said, reply = manager.add_many([
        {"content": "We are planning the team trip next month.", "participants": ["John"], "memory_type": "episodic",
         "session_id": "s1", "created_at": day},
        {"content": "Edinburgh would be great.", "participants": ["Tim"], "memory_type": "episodic",
         "session_id": "s1", "created_at": day},
    ])
    hits = {h.item.id: h for h in manager.search("team trip next month", memory_types=["episodic"], limit=5)}
    assert said.id in hits and all(h.breakdown["adjacent"] == 0.0 for h in hits.values())
    assert manager.bundle.records.previous_in_session([reply.id, said.id], manager.user_id) == {reply.id: said.id}
