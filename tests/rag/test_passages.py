"""Passages: a chunk is embedded as several passages and scored by its best one."""

from __future__ import annotations

import re

import numpy as np
import pytest

from hello_memory import Settings
from hello_memory.language.text import estimate_tokens
from hello_memory.stores.chunks.passage_index import COLLECTION, LEGACY_COLLECTION, passage_id
from hello_memory.stores.vectors.base import Filter, VectorPoint
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder, fake_vector
from rag import RAGPipeline, retrieval
from rag.passages import MAX_PASSAGES, PASSAGE_TOKENS, passages

EN = "\n\n".join(
    f"Paragraph {i} explains topic number {i} in plain words. It has a second sentence about item {i}."
    for i in range(40)
)
ZH = "".join(f"第{i}段介绍了第{i}个主题的内容。它还有第二句话，说明了第{i}个要点。" for i in range(60))


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize(
    "text", [EN, ZH[:600], ZH, "word " * 5000, "短" * 3000], ids=["en", "zh", "zh-long", "words", "cjk-run"]
)
def test_passages_cover_the_chunk_and_are_bounded(text):
    parts = passages(text)
    assert 1 < len(parts) <= MAX_PASSAGES
    assert _squash("".join(parts)) == _squash(text)  # in order, nothing lost or repeated
    if estimate_tokens(text) <= PASSAGE_TOKENS * MAX_PASSAGES // 2:  # no merging needed
        assert all(estimate_tokens(p) <= PASSAGE_TOKENS for p in parts)


def test_a_short_chunk_is_one_passage():
    assert passages("一个短句。") == ["一个短句。"]


@pytest.fixture
def fake_pipeline(tmp_path):
    p = RAGPipeline(
        Settings(home=tmp_path / "data", chunk_tokens=2000, overlap_tokens=0),
        namespace="kb",
        embedder=DeterministicFakeEmbedder(dimension=32),
    )
    yield p
    p.close()


def test_a_long_chunk_is_found_by_its_best_passage(fake_pipeline):
    p = fake_pipeline
    report = p.add_text(EN, document_id="guide")
    assert report.chunks == 1
    (chunk,) = p.store.get_chunks("kb").values()
    parts = passages(chunk.text)
    points = p.bundle.vectors.get(COLLECTION, [passage_id(chunk.chunk_id, i) for i in range(len(parts))])
    assert len(points) == len(parts) > 1 and {pt.payload["chunk_id"] for pt in points} == {chunk.chunk_id}
    # The fake embedder scores only an exact text 1.0: the third passage, asked verbatim, is found.
    hit = p.search(parts[2], limit=1).hits[0]
    assert hit.chunk_id == chunk.chunk_id and hit.breakdown["dense"] == pytest.approx(1.0, abs=1e-5)
    assert hit.text == chunk.text  # search still returns (and cites) the whole chunk


def test_lexical_only_candidates_get_their_best_passage_cosine(fake_pipeline):
    p = fake_pipeline
    p.add_text(EN, document_id="guide")
    (chunk,) = p.store.get_chunks("kb").values()
    q = fake_vector("some query", 32)
    dense: dict[str, float] = {}
    retrieval.fill_dense(p.core, q, dense, {chunk.chunk_id: 1.0})
    expected = max(float(np.dot(fake_vector(t, 32), q)) for t in passages(chunk.text))
    assert dense[chunk.chunk_id] == pytest.approx(expected, abs=1e-5)


def test_deleting_a_document_removes_every_passage(fake_pipeline):
    p = fake_pipeline
    p.add_text(EN, document_id="guide")
    p.add_text("A short note.", document_id="note")
    assert p.bundle.vectors.count(COLLECTION, Filter(equals={"document_id": "guide"})) > 1
    p.delete_document("guide")
    assert p.bundle.vectors.count(COLLECTION, Filter(equals={"document_id": "guide"})) == 0
    assert p.bundle.vectors.count(COLLECTION, Filter(equals={"document_id": "note"})) == 1


def test_an_index_of_one_vector_per_chunk_is_upgraded_on_open(tmp_path):
    settings = Settings(home=tmp_path / "data", chunk_tokens=2000, overlap_tokens=0)
    embedder = DeterministicFakeEmbedder(dimension=32)
    p = RAGPipeline(settings, namespace="kb", embedder=embedder)
    p.add_text(EN, document_id="guide")
    RAGPipeline(settings, namespace="other", embedder=embedder).add_text("Another namespace.", document_id="x")
    expected = p.bundle.vectors.count(COLLECTION)
    # What an earlier version left: one point per chunk in "rag_chunks", no passage collection.
    vs = p.bundle.vectors
    vs.drop_collection(COLLECTION)
    vs.ensure_collection(LEGACY_COLLECTION, 32, embedder=embedder.name)
    rows = p.store.query("SELECT chunk_id, namespace, document_id, text FROM chunks")
    vs.upsert(
        LEGACY_COLLECTION,
        [VectorPoint(r[0], fake_vector(r[3], 32), {"namespace": r[1], "document_id": r[2]}) for r in rows],
    )
    p.close()
    p = RAGPipeline(settings, namespace="kb", embedder=embedder)
    try:
        assert LEGACY_COLLECTION not in p.bundle.vectors.collections()
        assert p.bundle.vectors.count(COLLECTION) == expected
        assert p.bundle.vectors.count(COLLECTION, Filter(equals={"namespace": "other"})) == 1
        (chunk,) = p.store.get_chunks("kb").values()
        assert p.search(passages(chunk.text)[1], limit=1).hits[0].chunk_id == chunk.chunk_id
    finally:
        p.close()


@pytest.mark.parametrize("text", ["x" * 25_600, "QUJD" * 6400, ("y" * 500 + " ") * 50], ids=["run", "b64", "runs"])
def test_unbroken_runs_are_split_and_the_model_sees_a_bounded_text(text):
    """A 25,600-character run was one passage (one "token" to estimate_tokens): 2 GB of RSS per word."""
    parts = passages(text)
    assert 1 < len(parts) <= MAX_PASSAGES
    assert all(len(p) <= PASSAGE_TOKENS * 16 for p in parts)
    assert all(max(len(w) for w in p.split()) <= 64 for p in parts)


def test_cjk_text_is_not_cut_as_a_run():
    text = "短句没有空格" * 400
    assert "".join(passages(text)) == text
