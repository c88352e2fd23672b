"""Fuzzing: hostile text and arguments never crash (other than with a typed error) and never hang.

Complements the chunker properties in ``tests/rag/test_chunking.py`` with the whole of Unicode
(lone surrogates and control characters included), Markdown-heavy alphabets, the vector filter
compiler run against a real Qdrant Edge shard, and every search argument.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hello_memory import MemoryManager, Settings
from hello_memory.errors import HelloMemoryError, InvalidInputError
from hello_memory.language.text import estimate_tokens, lexical_tokens
from hello_memory.stores.vectors.base import Filter, Range, VectorPoint
from hello_memory.stores.vectors.edge import QdrantEdgeVectorStore
from hello_memory.stores.vectors.filters import compile_filter
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from rag.chunking import MAX_TITLE_CHARS, chunk_markdown

FAST = settings(deadline=timedelta(seconds=10), database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SLOW_FACTOR = 20  # the ``slow`` variants run 20x the examples, randomised


def fast_and_slow(examples: int, **strategies: Any) -> Any:
    """Two tests from one property: ``examples`` derandomised examples, and a ``slow`` one with 20x."""

    def make(fn: Any) -> tuple[Any, Any]:
        fast = settings(FAST, max_examples=examples)(given(**strategies)(fn))
        slow = settings(FAST, max_examples=examples * SLOW_FACTOR, derandomize=False)(given(**strategies)(fn))
        return fast, pytest.mark.slow(slow)

    return make

ANY_CHAR = st.characters(exclude_categories=())  # surrogates and control characters included
MARKDOWN_CHAR = st.sampled_from(list("#`~ \t\n\r-=*>|[]()!.。，、：；？！ab中文\u3000\u00a0\ufeff\x00\x0b\x0c"))
TEXT = st.one_of(st.text(ANY_CHAR, max_size=400), st.text(MARKDOWN_CHAR, max_size=600))


# -- text helpers and the chunker ----------------------------------------------------------------------
def _token_helpers_never_crash(text: str) -> None:
    n = estimate_tokens(text)
    assert 0 <= n <= len(text)
    tokens = lexical_tokens(text)
    assert all(isinstance(t, str) and t for t in tokens)


def _chunker_never_crashes_and_covers_the_text(md: str, budget: int, overlap: int) -> None:
    if overlap >= budget:
        with pytest.raises(InvalidInputError):
            chunk_markdown(md, chunk_tokens=budget, overlap_tokens=overlap)
        return
    chunks = chunk_markdown(md, chunk_tokens=budget, overlap_tokens=overlap)
    for c in chunks:
        assert md[c.start : c.end] == c.text and c.tokens <= budget
        assert len(c.heading_path) <= 6 * (MAX_TITLE_CHARS + 3)
    new_text = "".join(md[c.overlap_start : c.end] for c in chunks)
    assert "".join(new_text.split()) == "".join(md.split()), "non-whitespace text lost or repeated"


@settings(FAST, max_examples=60)
@given(level=st.integers(1, 6), title=st.text(ANY_CHAR.filter(lambda c: c not in "\r\n"), min_size=150,
                                              max_size=3000), body=st.text(MARKDOWN_CHAR, max_size=300))
def test_long_heading_titles_are_bounded(level: int, title: str, body: str) -> None:
    md = f"{'#' * level} {title}\n\n{body}"
    chunks = chunk_markdown(md, chunk_tokens=20, overlap_tokens=3)
    assert all(len(c.heading_path) <= 6 * (MAX_TITLE_CHARS + 3) for c in chunks)


@settings(FAST, max_examples=100)
@given(md=st.one_of(st.none(), st.integers(), st.binary(), st.lists(st.text())),
       budget=st.one_of(st.integers(-5, 0), st.floats(allow_nan=True), st.booleans(), st.text(max_size=3)))
def test_chunker_rejects_wrong_types(md: Any, budget: Any) -> None:
    with pytest.raises(InvalidInputError):
        chunk_markdown(md, chunk_tokens=budget, overlap_tokens=0)


# -- the vector filter compiler, run on a real Qdrant Edge shard ---------------------------------------
KEYS = st.one_of(st.sampled_from(["user_id", "memory_type", "created_ts", "namespace", "n", "flag", "tags"]),
                 st.text(ANY_CHAR, max_size=12), st.integers(), st.none())
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                    st.text(ANY_CHAR, max_size=10), st.binary(max_size=4), st.just(object()), st.just({"a": 1}))
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=4), st.tuples(SCALARS, SCALARS))
BOUNDS = st.one_of(st.none(), st.floats(allow_nan=True), st.integers(-(2**70), 2**70), st.text(max_size=3),
                   st.booleans())


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QdrantEdgeVectorStore]:
    store = QdrantEdgeVectorStore(tmp_path_factory.mktemp("fuzz-edge"))
    store.ensure_collection("c", 4, embedder="fuzz")
    rng = np.random.default_rng(3)
    payloads = [{"user_id": "u1", "memory_type": "episodic", "created_ts": 1.5, "n": 3, "flag": True,
                 "tags": ["a", "b"]}, {"user_id": "u2", "n": -7, "flag": False, "tags": []}, {}]
    store.upsert("c", [VectorPoint(str(uuid.uuid4()), rng.random(4).astype(np.float32) + 0.1, p)
                       for p in payloads])
    yield store
    store.close()


def _filters_compile_or_fail_typed_and_run_on_the_engine(edge: QdrantEdgeVectorStore, equals: dict,
                                                         exclude: dict, ranges: dict) -> None:
    where = Filter(equals=equals, exclude=exclude, ranges={k: Range(*b) for k, b in ranges.items()})
    try:
        compiled = compile_filter(where)
    except InvalidInputError:
        return
    expected = 3 if compiled is None else sum(compiled.matches(p.payload) for p in edge.get("c", edge.ids("c")))
    assert edge.count("c", where) == expected  # the engine agrees with the reference semantics
    assert len(edge.search("c", np.ones(4, np.float32), limit=5, where=where)) == expected


# -- search arguments ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fuzz_mm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    home: Path = tmp_path_factory.mktemp("fuzz-mm") / "data"
    mm = MemoryManager(Settings(home=home), user_id="fuzz", enable_perceptual=True,
                       embedder=DeterministicFakeEmbedder(16))
    for i, t in enumerate(("working", "episodic", "semantic", "perceptual") * 3):
        mm.add(f"Alice visited Paris {i}", memory_type=t, importance=i / 12, session_id=f"s{i % 2}",
               created_at=datetime(2025, 1, 1 + i, tzinfo=timezone.utc) if t != "working" else None)
    yield mm
    mm.close()


DATES = st.one_of(st.none(), st.datetimes(timezones=st.sampled_from([None, timezone.utc])),
                  st.text(max_size=25), st.integers(), st.floats(allow_nan=True), st.sampled_from(
                      ["2025-01-03", "2025-01-03T00:00:00+08:00", "9999-12-31", "0001-01-01", "2025-02-30"]))
NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 2000), st.booleans(),
                    st.none(), st.text(max_size=3), st.integers(10**300, 10**400))


def _search_arguments_never_crash(fuzz_mm: MemoryManager, query: str, time_range: Any, memory_types: Any,
                                  limit: Any, min_importance: Any, min_score: Any, session_id: Any) -> None:
    try:
        hits = fuzz_mm.search(query, time_range=time_range, memory_types=memory_types, limit=limit,
                              min_importance=min_importance, min_score=min_score, session_id=session_id)
    except HelloMemoryError:
        return
    assert len(hits) <= limit and all(h.item.user_id == "fuzz" for h in hits)
    assert all(math.isfinite(h.score) and h.item.importance >= min_importance for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@pytest.mark.parametrize("key", ["user_id\n", "a:b", "a b", "x.y", "k[0]", "", "\u00a0"])
def test_filter_keys_qdrant_cannot_parse_are_refused(key: str) -> None:
    with pytest.raises(InvalidInputError):
        compile_filter(Filter(equals={key: "v"}))


@pytest.mark.parametrize("name", ["memories\n", "a/b", "../x", ".hidden", "", "x" * 65])
def test_collection_names_that_are_not_plain_directory_names_are_refused(name: str, tmp_path: Path) -> None:
    store = QdrantEdgeVectorStore(tmp_path)
    with pytest.raises(InvalidInputError):
        store.ensure_collection(name, 4, embedder="e")
    store.close()


test_token_helpers_never_crash, test_token_helpers_never_crash_slow = fast_and_slow(400, text=TEXT)(
    _token_helpers_never_crash
)
test_chunker_never_crashes, test_chunker_never_crashes_slow = fast_and_slow(
    300, md=TEXT, budget=st.integers(1, 80), overlap=st.integers(0, 79)
)(_chunker_never_crashes_and_covers_the_text)
test_filters_compile_and_run, test_filters_compile_and_run_slow = fast_and_slow(
    300,
    equals=st.dictionaries(KEYS, VALUES, max_size=3),
    exclude=st.dictionaries(KEYS, VALUES, max_size=2),
    ranges=st.dictionaries(KEYS, st.tuples(BOUNDS, BOUNDS), max_size=2),
)(_filters_compile_or_fail_typed_and_run_on_the_engine)
test_search_arguments_never_crash, test_search_arguments_never_crash_slow = fast_and_slow(
    250,
    query=TEXT,
    time_range=st.one_of(st.none(), st.tuples(DATES, DATES), st.tuples(DATES), st.text(max_size=4),
                         st.lists(DATES, max_size=3)),
    memory_types=st.one_of(st.none(), st.lists(st.sampled_from(["working", "episodic", "semantic", "perceptual",
                                                               "bogus", "", 5, None]), max_size=4),
                           st.sampled_from(["semantic", "bogus", 7])),
    limit=NUMBERS, min_importance=NUMBERS, min_score=NUMBERS,
    session_id=st.one_of(st.none(), st.sampled_from(["s0", "s1", "", "x\x00"]), st.integers()),
)(_search_arguments_never_crash)
