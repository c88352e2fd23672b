"""Congruence: the same corpus and queries on the SQLite (FTS5 BM25) and Qdrant (sparse IDF) record stores.

The two lexical rankings are not identical by design (a fixed ``avg_len`` instead of FTS5's live
mean, a slightly different IDF, no common-term pruning), so the check is a tolerance on the top-5
overlap. Measured (top-5 overlap, this code): synthetic corpus seeds 11-14 0.90-0.93 (window 0) and
0.87-0.92 (window 2); LoCoMo conversation 0, 100 questions, defaults: 0.954. Lexical-only recall on
the dev sets is in ``BENCHMARKS.md`` (``python -m benchmarks.lexical_parity``).
"""

from __future__ import annotations

import random
import statistics
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from hello_memory.language.text import lexical_tokens
from hello_memory.models import MemoryItem, MemoryType
from hello_memory.stores.records.base import RecordStore, RecordWrite
from hello_memory.stores.records.qdrant import QdrantRecordStore
from hello_memory.stores.records.sqlite import SQLiteRecordStore
from hello_memory.stores.sparse import LexicalEncoder, context_document, index_terms
from hello_memory.testing.record_lexical import top_k_overlap

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
WORDS = [
    "tea",
    "coffee",
    "mountain",
    "river",
    "violin",
    "budget",
    "puppy",
    "lasagna",
    "garden",
    "train",
    "ticket",
    "museum",
    "painting",
    "doctor",
    "appointment",
    "birthday",
    "concert",
    "marathon",
    "recipe",
    "camera",
    "laptop",
    "bicycle",
    "festival",
    "island",
    "爬山",
    "绿茶",
    "咖啡",
    "小提琴",
    "预算",
    "小狗",
    "火车",
    "博物馆",
    "医生",
    "生日",
    "音乐会",
    "马拉松",
    "相机",
    "自行车",
    "岛屿",
]


def synthetic(seed: int = 11, n: int = 300) -> tuple[list[tuple[str, str]], list[str]]:
    """``n`` (session, text) documents with Zipf-distributed words, and 60 short queries."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "zu", "ren", "tas", "vo", "qi", "bel", "dor"]
    vocab = list(WORDS) + sorted({"".join(rng.choices(syllables, k=3)) for _ in range(600)})
    rng.shuffle(vocab)
    weights = [1 / (r + 1) for r in range(len(vocab))]
    docs = []
    for i in range(n):
        words = rng.choices(vocab, weights, k=rng.randint(3, 14))
        docs.append((f"s{i // 12}", " ".join(words)))
    queries = [" ".join(rng.choices(vocab, weights, k=rng.randint(1, 4))) for _ in range(60)]
    return docs, queries


def overlap(stores: list[RecordStore], docs: list[tuple[str, str]], queries: list[str]) -> float:
    items = [
        MemoryItem(
            user_id="u",
            memory_type=MemoryType.EPISODIC,
            content=text,
            session_id=session,
            event_type="conversation",
            created_at=T0 + timedelta(minutes=i),
        )
        for i, (session, text) in enumerate(docs)
    ]
    for store in stores:
        for start in range(0, len(items), 200):
            store.apply([RecordWrite(it) for it in items[start : start + 200]])
    found = [
        [s.lexical_search("u", lexical_tokens(q), types=None, limit=10) for q in queries] for s in stores
    ]
    return statistics.mean(top_k_overlap(a, b, 5) for a, b in zip(*found, strict=True))


def mean_document_length(docs: list[tuple[str, str]], window: int) -> float:
    """FTS5's mean document length (terms + the scope token) for ``docs`` with ``window``."""
    terms = [index_terms(lexical_tokens(text)) for _, text in docs]
    total = 0
    for i, (session, _) in enumerate(docs):
        same = [j for j, (s, _) in enumerate(docs) if s == session]
        k = same.index(i)
        near = [terms[j] for j in same[max(0, k - window) : k] + same[k + 1 : k + 1 + window]]
        total += len(context_document(near, terms[i], [])) + 1
    return total / len(docs)


@pytest.mark.parametrize("window", [0, 2])
def test_sparse_idf_ranks_like_fts5_bm25_on_a_synthetic_corpus(tmp_path: Path, window: int) -> None:
    """The encoding itself (``avg_len`` set to the corpus's mean, as FTS5 uses it)."""
    docs, queries = synthetic()
    encoder = LexicalEncoder(avg_len=mean_document_length(docs, window))
    pair: list[RecordStore] = [
        SQLiteRecordStore(tmp_path / "r.db", context_window=window),
        QdrantRecordStore(":memory:", context_window=window, lexical=encoder),
    ]
    try:
        assert overlap(pair, docs, queries) >= 0.85
    finally:
        for s in pair:
            s.close()


def test_sparse_idf_ranks_like_fts5_bm25_on_a_locomo_conversation(tmp_path: Path, shared_data: Path) -> None:
    """The product's defaults (window 2, ``default_avg_len``) on real conversation turns."""
    from benchmarks.datasets import load_task

    task = load_task("locomo", shared_data / "locomo")
    cid = next(iter(task.corpora))
    docs = [(d.session_id or "", d.text) for d in task.corpora[cid]]
    queries = [q.text for q in task.queries if q.corpus_id == cid][:100]
    pair: list[RecordStore] = [
        SQLiteRecordStore(tmp_path / "r.db", context_window=2),
        QdrantRecordStore(":memory:", context_window=2),
    ]
    try:
        assert overlap(pair, docs, queries) >= 0.85
    finally:
        for s in pair:
            s.close()
