"""Isolation: random operations of 3 users (and 3 RAG namespaces) never return or touch another's data.

Hypothesis drives a :class:`RuleBasedStateMachine` against one MemoryManager. A model holds each
user's expected ids; after every step the live and forgotten ids of every user must equal the
model, and every raw row and vector point must carry its owner's user id. Each rule acting for one
user also snapshots every other user (including those of earlier examples) and checks that nothing
of theirs changed. Examples share one data directory with fresh user ids, so the 1.7 s collection
creation is paid once.
"""

from __future__ import annotations

import itertools
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from rel_scan import memory_collections, memory_problems, namespace_residue, rag_problems, rows, user_residue

from hello_memory import MemoryManager, Settings
from hello_memory.errors import NotFoundError
from hello_memory.stores.chunks.passage_index import COLLECTION as RAG_COLLECTION
from hello_memory.stores.records.sqlite_lexical import scope_token
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from rag import RAGPipeline

TYPES = ("working", "episodic", "semantic", "perceptual")
PHRASES = ("Alice lives in Paris", "I like green tea", "the meeting is on Monday", "项目截止日期是周五",
           "Bob works at Acme", "my password hint is blue")
_HOME = Path(tempfile.mkdtemp(prefix="hm-isolation-"))
_COUNTER = itertools.count()
_SHARED: dict[str, Any] = {}


def _manager() -> MemoryManager:
    if "mm" not in _SHARED:
        s = Settings(home=_HOME / "data", working_capacity=100_000, working_token_budget=10_000_000,
                     chunk_tokens=30, overlap_tokens=5)
        emb = DeterministicFakeEmbedder(dimension=16)
        _SHARED["mm"] = MemoryManager(s, user_id="nobody", enable_perceptual=True, embedder=emb)
        _SHARED["rag"] = {}
    return _SHARED["mm"]


def _pipeline(ns: str) -> RAGPipeline:
    mm = _manager()
    if ns not in _SHARED["rag"]:
        _SHARED["rag"][ns] = RAGPipeline(mm.settings, namespace=ns, embedder=mm.embedder, llm=None)
    return _SHARED["rag"][ns]


@pytest.fixture(scope="module", autouse=True)
def _close_shared() -> Any:
    yield
    for p in _SHARED.pop("rag", {}).values():
        p.close()
    if "mm" in _SHARED:
        _SHARED.pop("mm").close()


def _fingerprint(item: Any) -> tuple[Any, ...]:
    """What an operation of another user must never change (access counters may change by search)."""
    return (item.content, item.importance, item.memory_type.value, item.deleted_at, item.metadata, item.user_id)


class MemoryIsolation(RuleBasedStateMachine):
    """Three users on one MemoryManager; every other user is a bystander that must stay untouched."""

    def __init__(self) -> None:
        super().__init__()
        self.mm = _manager()
        run = next(_COUNTER)
        self.users = [f"user{u}-run{run}" for u in range(3)]
        self.live: dict[str, dict[str, float]] = {u: {} for u in self.users}  # id -> importance
        self.forgotten: dict[str, set[str]] = {u: set() for u in self.users}
        self.tags: dict[str, set[str]] = {u: set() for u in self.users}

    # -- helpers -------------------------------------------------------------------------------
    def _others(self, user: str) -> dict[str, dict[str, tuple[Any, ...]]]:
        everyone = set(self.mm.bundle.records.users()) - {user}
        return {u: {i.id: _fingerprint(i) for i in self.mm.get_all(user_id=u, include_deleted=True,
                                                                      limit=10**6)} for u in everyone}

    def _acting(self, user: str, fn: Any) -> Any:
        before = self._others(user)
        result = fn()
        assert self._others(user) == before, f"an operation of {user} changed another user's data"
        return result

    def _owned(self, data: st.DataObject, user: str) -> str:
        return data.draw(st.sampled_from(list(self.live[user])))  # insertion order: replayable

    # -- rules ---------------------------------------------------------------------------------
    @rule(u=st.integers(0, 2), t=st.sampled_from(TYPES), imp=st.floats(0.0, 1.0), phrase=st.sampled_from(PHRASES),
          tagged=st.booleans())
    def add(self, u: int, t: str, imp: float, phrase: str, tagged: bool) -> None:
        user = self.users[u]
        tag = f"tag{uuid.uuid4().hex[:10]}"
        text = f"{phrase} {tag}" if tagged else phrase  # untagged texts are identical across users
        extra = {"source_path": "/m/photo.jpg"} if t == "perceptual" else {}
        item = self._acting(user, lambda: self.mm.add(text, memory_type=t, importance=imp, user_id=user, **extra))
        assert item.user_id == user
        self.live[user][item.id] = item.importance
        if tagged:
            self.tags[user].add(tag)

    @rule(u=st.integers(0, 2), phrase=st.sampled_from(PHRASES), limit=st.integers(1, 30))
    def search(self, u: int, phrase: str, limit: int) -> None:
        user = self.users[u]
        hits = self._acting(user, lambda: self.mm.search(phrase, user_id=user, limit=limit))
        assert {h.item.id for h in hits} <= set(self.live[user])
        assert all(h.item.user_id == user for h in hits)

    @rule(u=st.integers(0, 2), phrase=st.sampled_from(PHRASES))
    def build_context(self, u: int, phrase: str) -> None:
        user = self.users[u]
        block = self._acting(user, lambda: self.mm.build_context(phrase, user_id=user, budget_tokens=400))
        assert {h.item.id for h in block.hits} <= set(self.live[user])
        for other in self.users:
            if other != user:
                assert not any(tag in block.text for tag in self.tags[other])

    @rule(u=st.integers(0, 2))
    def summary_and_stats(self, u: int) -> None:
        user = self.users[u]
        text = self._acting(user, lambda: self.mm.summary(limit=50, user_id=user))
        for other in self.users:
            if other != user:
                assert not any(tag in text for tag in self.tags[other]), "summary shows another user's memory"
        st_ = self.mm.stats(user_id=user)
        assert st_.total == len(self.live[user]) and st_.deleted == len(self.forgotten[user])

    @precondition(lambda self: any(self.live.values()))
    @rule(data=st.data(), imp=st.floats(0.0, 1.0))
    def update(self, data: st.DataObject, imp: float) -> None:
        user = data.draw(st.sampled_from([u for u in self.users if self.live[u]]))
        mid = self._owned(data, user)
        self._acting(user, lambda: self.mm.update(mid, content=f"updated {uuid.uuid4().hex[:6]}", importance=imp,
                                                  user_id=user))
        self.live[user][mid] = imp

    @precondition(lambda self: any(self.live.values()))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        user = data.draw(st.sampled_from([u for u in self.users if self.live[u]]))
        mid = self._owned(data, user)
        self._acting(user, lambda: self.mm.remove(mid, user_id=user))
        del self.live[user][mid]

    @precondition(lambda self: any(self.live.values()))
    @rule(data=st.data(), op=st.sampled_from(["get", "update", "remove", "restore"]))
    def touch_another_users_memory(self, data: st.DataObject, op: str) -> None:
        owner = data.draw(st.sampled_from([u for u in self.users if self.live[u]]))
        thief = data.draw(st.sampled_from([u for u in self.users if u != owner]))
        mid = self._owned(data, owner)
        calls = {"get": lambda: self.mm.get(mid, user_id=thief),
                 "update": lambda: self.mm.update(mid, content="stolen", user_id=thief),
                 "remove": lambda: self.mm.remove(mid, user_id=thief),
                 "restore": lambda: self.mm.restore(mid, user_id=thief)}
        before = self._others(thief)
        with pytest.raises(NotFoundError):
            calls[op]()
        assert self._others(thief) == before
        with pytest.raises(NotFoundError):  # like get: not the thief's (issue 27 §4)
            self.mm.history(mid, user_id=thief)

    @rule(u=st.integers(0, 2), threshold=st.floats(0.0, 0.6))
    def forget(self, u: int, threshold: float) -> None:
        user = self.users[u]
        report = self._acting(user, lambda: self.mm.forget("importance_based", threshold=threshold,
                                                           user_id=user))
        victims = {i for i, imp in self.live[user].items() if imp < threshold}
        assert {f.id for f in report.forgotten} == victims
        for i in victims:
            del self.live[user][i]
        self.forgotten[user] |= victims

    @rule(u=st.integers(0, 2), threshold=st.floats(0.0, 1.0))
    def consolidate(self, u: int, threshold: float) -> None:
        user = self.users[u]
        report = self._acting(user, lambda: self.mm.consolidate("working", "episodic", threshold, user_id=user))
        for sid in report.source_ids:
            assert sid in self.live[user], "consolidated another user's memory"
            del self.live[user][sid]
        for pid in report.promoted:
            self.live[user][pid] = self.mm.get(pid, user_id=user).importance

    @rule(u=st.integers(0, 2))
    def clear_all(self, u: int) -> None:
        user = self.users[u]
        n = self._acting(user, lambda: self.mm.clear_all(user))
        assert n == len(self.live[user]) + len(self.forgotten[user])
        self.live[user], self.forgotten[user] = {}, set()

    @rule(u=st.integers(0, 2))
    def forget_user(self, u: int) -> None:
        user = self.users[u]
        self._acting(user, lambda: self.mm.forget_user(user))
        self.live[user], self.forgotten[user] = {}, set()
        assert set(user_residue(self.mm.bundle.home, self.mm.bundle.vectors, user).values()) == {0}

    # -- invariants ----------------------------------------------------------------------------
    @invariant()
    def ids_match_the_model(self) -> None:
        for user in self.users:
            items = self.mm.get_all(user_id=user, include_deleted=True, limit=10**6)
            live = {i.id for i in items if i.deleted_at is None}
            assert live == set(self.live[user]), user
            assert {i.id for i in items} - live == self.forgotten[user], user
            assert all(i.user_id == user for i in items)

    @invariant()
    def raw_rows_and_points_carry_their_owner(self) -> None:
        home, vectors = self.mm.bundle.home, self.mm.bundle.vectors
        owner = dict(rows(home / "records.db", "SELECT id, user_id FROM memories"))
        for c in memory_collections(vectors):
            for p in vectors.get(c, vectors.ids(c)):
                assert p.payload["user_id"] == owner.get(p.id), f"point {p.id} in {c} has the wrong owner"
        scopes = rows(home / "records.db", "SELECT m.user_id, f.scope FROM memories m "
                                           "JOIN memories_fts f ON f.rowid = m.rowid")
        assert all(scope_token(u) == s for u, s in scopes)
        for u, mid in rows(home / "graph.db", "SELECT user_id, memory_id FROM mentions"):
            assert owner.get(mid) == u
        for table in ("history", "facts", "pending"):
            for u, mid in rows(home / "records.db", f"SELECT user_id, memory_id FROM {table}"):
                assert owner.get(mid) == u, f"{table} row of {mid} is filed under another user"
        assert memory_problems(home, vectors) == []


class RagIsolation(RuleBasedStateMachine):
    """Three namespaces on one data directory: search, delete and clear stay in their namespace."""

    def __init__(self) -> None:
        super().__init__()
        run = next(_COUNTER)
        self.names = [f"ns{n}-run{run}" for n in range(3)]
        self.pipes = [_pipeline(n) for n in self.names]
        self.docs: dict[str, set[str]] = {n: set() for n in self.names}
        self.n = 0

    @rule(k=st.integers(0, 2), phrases=st.lists(st.sampled_from(PHRASES), min_size=1, max_size=6))
    def add_text(self, k: int, phrases: list[str]) -> None:
        self.n += 1
        doc = f"doc{self.n}"  # the same document ids recur in every namespace
        text = "# Notes\n\n" + "\n\n".join(phrases)
        self.pipes[k].add_text(text, document_id=doc)
        self.docs[self.names[k]].add(doc)

    @rule(k=st.integers(0, 2), phrase=st.sampled_from(PHRASES), mqe=st.booleans())
    def search(self, k: int, phrase: str, mqe: bool) -> None:
        p = self.pipes[k]
        hits = p.search(phrase, limit=10, enable_mqe=mqe).hits
        assert {h.document_id for h in hits} <= self.docs[p.namespace]
        own = p.store.get_chunks(p.namespace)
        assert all(h.chunk_id in own for h in hits)

    @precondition(lambda self: any(self.docs.values()))
    @rule(data=st.data())
    def delete_in_another_namespace(self, data: st.DataObject) -> None:
        owner = data.draw(st.sampled_from([n for n in self.names if self.docs[n]]))
        other = data.draw(st.sampled_from([n for n in self.names if n != owner]))
        doc = data.draw(st.sampled_from(sorted(self.docs[owner])))
        p = self.pipes[self.names.index(other)]
        if doc in self.docs[other]:
            p.delete_document(doc)
            self.docs[other].discard(doc)
        else:
            with pytest.raises(NotFoundError):
                p.delete_document(doc)
        assert namespace_residue(p.bundle.home, p.bundle.vectors, other, doc)["rag:documents"] == 0

    @rule(k=st.integers(0, 2))
    def clear(self, k: int) -> None:
        p = self.pipes[k]
        p.clear()
        self.docs[p.namespace] = set()
        assert set(namespace_residue(p.bundle.home, p.bundle.vectors, p.namespace).values()) == {0}

    @invariant()
    def documents_match_the_model(self) -> None:
        for p in self.pipes:
            assert {d.document_id for d in p.list_documents()} == self.docs[p.namespace]
            assert p.stats().documents == len(self.docs[p.namespace])
        vectors = self.pipes[0].bundle.vectors
        if RAG_COLLECTION in vectors.collections():
            ns_of = dict(rows(self.pipes[0].bundle.home / "rag.db", "SELECT chunk_id, namespace FROM chunks"))
            for pt in vectors.get(RAG_COLLECTION, vectors.ids(RAG_COLLECTION)):
                assert pt.payload["namespace"] == ns_of.get(pt.payload["chunk_id"])
        assert rag_problems(self.pipes[0].bundle.home, vectors) == []


FAST = settings(max_examples=15, stateful_step_count=30, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=60, stateful_step_count=50, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

TestMemoryIsolation = MemoryIsolation.TestCase
TestMemoryIsolation.settings = FAST
TestRagIsolation = RagIsolation.TestCase
TestRagIsolation.settings = settings(FAST, max_examples=10, stateful_step_count=20)


class SlowMemoryIsolation(MemoryIsolation):
    """More and longer runs (``-m slow``)."""


class SlowRagIsolation(RagIsolation):
    """More and longer runs (``-m slow``)."""


SlowMemoryIsolation.TestCase.settings = SLOW
SlowRagIsolation.TestCase.settings = SLOW
TestMemoryIsolationSlow = pytest.mark.timeout(1800)(pytest.mark.slow(SlowMemoryIsolation.TestCase))
TestRagIsolationSlow = pytest.mark.timeout(1800)(pytest.mark.slow(SlowRagIsolation.TestCase))
