"""Conversation context in the lexical index: each episodic memory of a session is indexed with
the tokens of its neighbours (``Settings.lexical_context_window``), kept right through every write.

The invariant checked after random operations: every FTS document equals what a from-scratch
composition of the live memories gives — a stale neighbour would keep deleted text searchable
or leave a turn unreachable through the question that preceded it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.core.deletes import soft_delete
from hello_memory.language.text import lexical_tokens
from hello_memory.stores.records import sqlite_lexical
from hello_memory.stores.records.sqlite import SQLiteRecordStore
from hello_memory.stores.records.sqlite_lexical import scope_token
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def _manager(home: Path, user: str = "alice", window: int = 2) -> MemoryManager:
    return MemoryManager(
        Settings(home=home, lexical_context_window=window), user_id=user, embedder=DeterministicFakeEmbedder(16)
    )


def _turn(text: str, minute: int, session: str | None = "s1", *, turn: bool = True) -> dict[str, object]:
    """An episodic memory; a conversation turn (``event_type="conversation"``) unless ``turn=False``."""
    item: dict[str, object] = {"content": text, "memory_type": "episodic", "session_id": session,
                               "created_at": T0 + timedelta(minutes=minute)}
    if turn:
        item["event_type"] = "conversation"
    return item


def _lexical_ids(mm: MemoryManager, word: str) -> set[str]:
    return set(mm.bundle.records.lexical_search(mm.user_id, [word], types=["episodic"], limit=50))


def expected_documents(store: SQLiteRecordStore) -> dict[int, tuple[str, str]]:
    """rowid -> (scope, tokens) composed from scratch from the live rows."""
    rows = store.query(
        "SELECT rowid, user_id, session_id, memory_type, created_at, lex, fields FROM memories "
        "WHERE deleted_at IS NULL"
    )
    out: dict[int, tuple[str, str]] = {}
    w = store.context_window

    def is_turn(r: tuple) -> bool:
        return r[2] is not None and r[3] == "episodic" and json.loads(r[6]).get("event_type") == "conversation"

    for row in rows:
        rowid, user, session, _mtype, _created, lex, _fields = row
        if w == 0 or not is_turn(row):
            out[rowid] = (scope_token(user), lex)
            continue
        peers = sorted(
            (r for r in rows if r[1] == user and r[2] == session and is_turn(r)),
            key=lambda r: (r[4], r[0]),
        )
        i = [r[0] for r in peers].index(rowid)
        before, after = peers[max(0, i - w) : i], peers[i + 1 : i + 1 + w]
        parts = [r[5] for r in before] + [lex, lex] + [r[5] for r in after] if before or after else [lex]
        out[rowid] = (scope_token(user), " ".join(p for p in parts if p))
    return out


def actual_documents(store: SQLiteRecordStore) -> dict[int, tuple[str, str]]:
    return {r[0]: (r[1], r[2]) for r in store.query("SELECT rowid, scope, tokens FROM memories_fts")}


def test_a_turn_is_found_through_the_words_of_the_turns_around_it(tmp_path: Path) -> None:
    with _manager(tmp_path) as mm:
        q, a, other = mm.add_many([
            _turn("Where did you go hiking last weekend?", 0),
            _turn("We went up to the lake, it was beautiful.", 1),
            _turn("Completely unrelated chatter about taxes.", 9, session="s2"),
        ])
        assert _lexical_ids(mm, "hike") == {q.id, a.id}  # the answer is reachable through its question
        assert other.id not in _lexical_ids(mm, "lake")
        hits = mm.search("hiking", memory_types=["episodic"], limit=5)
        assert a.id in {h.item.id for h in hits}


def test_app_memories_sharing_a_session_are_not_turns(tmp_path: Path) -> None:
    """Document loads, Q&A records and notes written under one session id keep their own words:
    before the context window was limited to conversation turns, every one of them scored lexical
    0.73-0.86 for "dentist appointment" through the one note that named it."""
    with _manager(tmp_path) as mm:
        notes = mm.add_many([
            _turn("Loaded the document guide.pdf, 12 chunks", 0, turn=False),
            _turn("Learnt about RAG chunking (source: guide.pdf)", 1, turn=False),
            _turn("Dentist appointment on Friday at 3pm", 2, turn=False),
            _turn("Learnt about BM25 scoring (source: guide.pdf)", 3, turn=False),
            _turn("Loaded the document notes.md, 3 chunks", 4, turn=False),
        ])
        dentist = notes[2]
        assert _lexical_ids(mm, "dentist") == {dentist.id}
        hits = mm.search("dentist appointment", memory_types=["episodic"], limit=5)
        lexical = {h.item.id: h.breakdown["lexical"] for h in hits}
        assert lexical.pop(dentist.id) == 1.0
        assert all(v == 0.0 for v in lexical.values()), lexical
        # a conversation in the same session neither reaches into the notes nor is reached from them
        turns = mm.add_many([_turn("Shall we book the dentist?", 5), _turn("Yes, Friday works", 6)])
        assert _lexical_ids(mm, "dentist") == {dentist.id, *(t.id for t in turns)}
        assert _lexical_ids(mm, "chunk") == {notes[0].id, notes[1].id, notes[4].id}


def test_a_file_indexed_under_the_old_rule_is_reindexed(tmp_path: Path) -> None:
    with _manager(tmp_path) as mm:
        a, b = mm.add_many([_turn("pelican note", 0, turn=False), _turn("other note", 1, turn=False)])
        store = mm.bundle.records
        # what a file written before the turn rule holds: context for every session memory
        with store.transaction() as conn:
            conn.execute("UPDATE memories_fts SET tokens = 'pelican note other note' WHERE rowid IN "
                         "(SELECT rowid FROM memories)")
            conn.execute("UPDATE meta SET value='2' WHERE key='lexical_context_window'")
        assert _lexical_ids(mm, "pelican") == {a.id, b.id}
    with _manager(tmp_path) as mm:
        assert _lexical_ids(mm, "pelican") == {a.id}
        assert actual_documents(mm.bundle.records) == expected_documents(mm.bundle.records)


def test_window_zero_indexes_own_tokens_only(tmp_path: Path) -> None:
    with _manager(tmp_path, window=0) as mm:
        q, _ = mm.add_many([_turn("Where did you go hiking?", 0), _turn("Up to the lake.", 1)])
        assert _lexical_ids(mm, "hike") == {q.id}


def test_removing_a_turn_takes_its_words_out_of_its_neighbours(tmp_path: Path) -> None:
    with _manager(tmp_path) as mm:
        q, a = mm.add_many([_turn("my secret codeword is pelican", 0), _turn("noted, thanks", 1)])
        assert a.id in _lexical_ids(mm, "pelican")
        mm.remove(q.id)
        assert _lexical_ids(mm, "pelican") == set()


def test_soft_delete_restore_and_update_keep_neighbours_current(tmp_path: Path) -> None:
    with _manager(tmp_path) as mm:
        q, a = mm.add_many([_turn("we adopted a kitten", 0), _turn("how lovely", 1)])
        mm.forget(strategy="importance_based", threshold=1.0)  # soft-deletes everything
        assert _lexical_ids(mm, "kitten") == set()
        mm.restore(q.id)
        mm.restore(a.id)
        assert _lexical_ids(mm, "kitten") == {q.id, a.id}
        mm.update(q.id, content="we adopted a puppy")
        assert _lexical_ids(mm, "kitten") == set()
        assert _lexical_ids(mm, "puppi") == {q.id, a.id}


def test_users_sharing_a_session_id_never_share_context(tmp_path: Path) -> None:
    with _manager(tmp_path, user="alice") as alice, _manager(tmp_path, user="bob") as bob:
        alice.add_many([_turn("alice talks about her divorce", 0, session="chat")])
        b = bob.add_many([_turn("bob says hello", 1, session="chat")])[0]
        assert bob.bundle.records.lexical_search("bob", ["divorc"], types=None, limit=5) == {}
        assert b.id in _lexical_ids(bob, "hello")


def test_reopening_with_another_window_reindexes(tmp_path: Path) -> None:
    with _manager(tmp_path, window=0) as mm:
        q, a = mm.add_many([_turn("Where did you go hiking?", 0), _turn("Up to the lake.", 1)])
        assert _lexical_ids(mm, "hike") == {q.id}
    with _manager(tmp_path, window=1) as mm:
        assert _lexical_ids(mm, "hike") == {q.id, a.id}
        assert actual_documents(mm.bundle.records) == expected_documents(mm.bundle.records)


def test_out_of_order_adds_place_a_turn_by_its_time(tmp_path: Path) -> None:
    with _manager(tmp_path, window=1) as mm:
        first, third = mm.add_many([_turn("alpha", 0), _turn("gamma", 2)])
        second = mm.add_many([_turn("beta", 1)])[0]
        assert _lexical_ids(mm, "alpha") == {first.id, second.id}  # alpha-beta, not alpha-gamma
        assert _lexical_ids(mm, "gamma") == {second.id, third.id}


WORDS = ["apple", "river", "guitar", "paris", "kitten", "chess", "tea", "rain"]


def _random_operations(mm: MemoryManager, rnd: random.Random, steps: int) -> Iterator[int]:
    """Random adds, removes, updates, soft deletes and restores; yields after each step."""
    live: list[str] = []
    deleted: list[str] = []
    for step in range(steps):
        op = rnd.random()
        if op < 0.45 or not live:
            batch = [_turn(f"{rnd.choice(WORDS)} {rnd.choice(WORDS)} {step}", rnd.randrange(40),
                           session=rnd.choice(["s1", "s2", None]), turn=rnd.random() < 0.7)
                     for _ in range(rnd.randint(1, 4))]
            live += [m.id for m in mm.add_many(batch)]
        elif op < 0.6:
            mm.remove(victim := rnd.choice(live))
            live.remove(victim)
        elif op < 0.75:
            mid = rnd.choice(live)
            mm.update(mid, content=f"{rnd.choice(WORDS)} changed {step}")
        elif op < 0.9:
            mid = rnd.choice(live)
            soft_delete(mm.core, [mm.get(mid)], "test")
            live.remove(mid)
            deleted.append(mid)
        elif deleted:
            mid = deleted.pop(rnd.randrange(len(deleted)))
            mm.restore(mid)
            live.append(mid)
        yield step


@pytest.mark.parametrize("seed", range(4))
def test_index_matches_a_from_scratch_composition_after_random_operations(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    with _manager(tmp_path, window=rnd.choice([1, 2, 3])) as mm:
        for step in _random_operations(mm, rnd, 60):
            store = mm.bundle.records
            assert actual_documents(store) == expected_documents(store), f"step {step}"


@pytest.mark.parametrize("seed", range(3))
def test_cached_term_frequencies_select_the_same_terms_as_exact_counts(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_lexical, "COMMON_TERM_DOCS", 6)  # so that common terms come and go
    rnd = random.Random(seed)
    with _manager(tmp_path, window=rnd.choice([0, 1, 2])) as mm:
        store = mm.bundle.records
        reused = 0
        for step in _random_operations(mm, rnd, 80):
            terms = rnd.sample(WORDS, 4)
            cached = store._selective_terms(terms)[0]
            reused += sum(t in store._df_cache for t in terms)
            kept, store._df_cache = store._df_cache, {}
            assert cached == store._selective_terms(terms)[0], f"step {step}"
            store._df_cache = kept
        assert reused > 0  # the cache was exercised, not bypassed


@pytest.mark.parametrize("bad", [-1, 11, 1.5, True, "2"])
def test_a_bad_window_is_refused_by_the_store(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="context_window"):
        SQLiteRecordStore(tmp_path / "r.db", context_window=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, 11, 1.5, "many"])
def test_a_bad_window_is_refused_by_settings(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="lexical_context_window"):
        Settings(home=tmp_path, lexical_context_window=bad)  # environment strings like "2" are parsed


@pytest.mark.parametrize("seed", range(3))
def test_lexical_results_are_the_same_with_or_without_the_scope_token(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scope token only chooses a plan: the JOIN on user_id isolates users on its own."""
    rnd = random.Random(seed)
    users = {"alice": 120, "bob": 15, "carol": 3}
    ids: dict[str, set[str]] = {}
    with _manager(tmp_path) as mm:
        for user, n in users.items():
            turns = [{**_turn(f"{rnd.choice(WORDS)} {rnd.choice(WORDS)} {user} {i}", i, rnd.choice(["s1", None])),
                      "user_id": user} for i in range(n)]  # fmt: skip
            ids[user] = {m.id for m in mm.add_many(turns)}
        store, found = mm.bundle.records, 0
        for _ in range(30):
            user, words = rnd.choice(list(users)), rnd.sample([*WORDS, *users], 3)
            plans = []
            for scoped in (True, False):
                monkeypatch.setattr(store, "_scope_pays", lambda *_a, s=scoped: s)
                plans.append(store.lexical_search(user, lexical_tokens(" ".join(words)), types=None, limit=20))
            assert plans[0] == plans[1]
            assert set(plans[1]) <= ids[user]
            found += len(plans[1])
        assert found > 100


def test_the_scope_token_is_used_only_when_other_users_matches_cost_more_than_walking_the_users(
    tmp_path: Path,
) -> None:
    with _manager(tmp_path) as mm:
        mm.add_many([_turn(f"tea {i}", i, session=None) for i in range(30)] + [_turn("rare word", 99, None)])
        store = mm.bundle.records
        assert store._selective_terms(["tea", "rare"]) == (["rare", "tea"], 31)
        # the only user of the store: every match is theirs, the scope never pays
        assert not store._scope_pays("alice", 1) and not store._scope_pays("alice", 31)
        assert store._scope_pays("alice", None)  # a single term is not counted
        bob = [dict(_turn(f"tea {i}", i, session=None), user_id="bob") for i in range(3069)]
        mm.add_many(bob)  # alice now holds 31 of 3,100 memories
        store._forget_frequencies()
        # walking alice's 31 postings costs 31 × SCOPE_POSTING_COST ≈ 0.8 ranked matches
        assert not store._scope_pays("alice", 0)
        assert store._scope_pays("alice", 2)
        # bob holds 99 %: ranking the 1 % of matches that are alice's costs less than walking his
        assert not store._scope_pays("bob", 3000)


def test_the_query_terms_stop_at_the_postings_budget_rarest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_lexical, "POSTINGS_BUDGET", 11)
    with _manager(tmp_path) as mm:
        mm.add_many(
            [_turn(f"tea {i}", i, session=None) for i in range(8)]
            + [_turn(f"cake {i}", 20 + i, session=None) for i in range(3)]
            + [_turn("rare word", 99, None)]
        )
        store = mm.bundle.records
        # rare (1) + cake (3) fit in 11 documents; tea (8) would make 12: it is dropped
        assert store._selective_terms(["tea", "cake", "rare"]) == (["rare", "cake"], 4)
        found = mm.bundle.records.lexical_search(mm.user_id, ["tea", "cake", "rare"], types=None, limit=50)
        assert len(found) == 4
        # a budget never drops the rarest term, however common it is
        monkeypatch.setattr(sqlite_lexical, "POSTINGS_BUDGET", 2)
        assert store._selective_terms(["tea", "cake"]) == (["cake"], 3)
