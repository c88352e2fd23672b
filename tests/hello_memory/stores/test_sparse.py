"""The sparse lexical encoding: FTS5's terms, stable ids, BM25 weights, server IDF."""

from __future__ import annotations

import math
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qdrant_client import QdrantClient, models

from hello_memory.errors import InvalidInputError
from hello_memory.language.text import lexical_tokens
from hello_memory.stores.records.sqlite_lexical import fts_tokens
from hello_memory.stores.sparse import LexicalEncoder, context_document, index_terms, term_id

# Latin with diacritics, Greek, Cyrillic, CJK, kana, hangul, digits, '_' and punctuation.
ALPHABET = "abcxyzABCXYZ éèüñçøłßÅÉ αβγάΩ абвЖ 喜欢爬山周末绿茶 カタかな 한국 0123 _ -.,!?'’:;()“”%&/\\\t\n"


def fts5_terms(text: str) -> list[str]:
    """The terms FTS5 (``unicode61``) indexes for the record store's token string, in order."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(tokens, tokenize='unicode61')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    conn.execute("INSERT INTO f VALUES (?)", (" ".join(fts_tokens(lexical_tokens(text))),))
    return [r[0] for r in conn.execute("SELECT term FROM v ORDER BY offset")]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=80))
def test_index_terms_are_the_terms_fts5_indexes(text: str) -> None:
    assert index_terms(lexical_tokens(text)) == fts5_terms(text)


@pytest.mark.parametrize(
    "text",
    ["Café naïve résumé", "foo_bar baz__qux", "Straße ΑΒΓ άλφα", "我周末喜欢去爬山", "x² ½ ⅷ", "ø æ ł đ"],
)
def test_index_terms_on_fixed_cases(text: str) -> None:
    assert index_terms(lexical_tokens(text)) == fts5_terms(text)


def test_term_ids_are_stable_across_processes_and_versions() -> None:
    # Pinned: changing the hash would silently break every collection already written.
    assert (term_id("tea"), term_id("喜欢"), term_id("")) == (532194854, 1840711560, 309448485)
    assert all(0 <= term_id(t) < 2**32 for t in ("a", "b" * 500, "🙂"))


def test_document_weights_are_bm25_saturated_term_frequencies() -> None:
    enc = LexicalEncoder(k1=1.2, b=0.75, avg_len=10)
    ids, weights = enc.document(["tea", "tea", "green"])
    by_id = dict(zip(ids, weights, strict=True))
    norm = 1.2 * (1 - 0.75 + 0.75 * 4 / 10)  # 3 terms + FTS5's scope token
    assert by_id[term_id("tea")] == pytest.approx(2 * 2.2 / (2 + norm))
    assert by_id[term_id("green")] == pytest.approx(1 * 2.2 / (1 + norm))
    assert ids == sorted(ids)
    # saturation: more occurrences weigh more, never more than k1 + 1; longer documents weigh less
    tf = [dict(zip(*enc.document(["tea"] * n), strict=True))[term_id("tea")] for n in (1, 2, 5, 50)]
    assert tf == sorted(tf) and tf[-1] < 2.2
    short = dict(zip(*enc.document(["tea", "x"]), strict=True))[term_id("tea")]
    long = dict(zip(*enc.document(["tea", *["x"] * 30]), strict=True))[term_id("tea")]
    assert long < short
    assert enc.document([]) == ([], [])


def test_queries_weigh_each_distinct_term_once() -> None:
    ids, values = LexicalEncoder().query(["tea", "tea", "green"])
    assert sorted(ids) == sorted({term_id("tea"), term_id("green")}) and values == [1.0, 1.0]
    assert LexicalEncoder().query([]) == ([], [])
    assert len(LexicalEncoder().query([f"t{i}" for i in range(1000)])[0]) == 256


@pytest.mark.parametrize(
    "kwargs", [{"k1": -1}, {"b": 1.5}, {"b": -0.1}, {"avg_len": 0}, {"avg_len": math.nan}, {"k1": True}]
)
def test_encoder_parameters_are_validated(kwargs: dict[str, float]) -> None:
    with pytest.raises(InvalidInputError):
        LexicalEncoder(**kwargs)


def test_encoder_round_trips_through_collection_metadata() -> None:
    enc = LexicalEncoder(k1=1.5, b=0.5, avg_len=33.0)
    assert LexicalEncoder.from_json(enc.to_json()) == enc
    with pytest.raises(InvalidInputError):
        LexicalEncoder.from_json({**enc.to_json(), "hash": "md5"})


def test_context_document_mirrors_the_fts5_rule() -> None:
    assert context_document([], ["a"], []) == ["a"]
    assert context_document([["p"], ["q"]], ["a"], [["n"]]) == ["p", "q", "a", "a", "n"]


def test_server_idf_times_client_weights_is_bm25() -> None:
    """Qdrant's score is ``Σ idf(t)·w(t)`` with ``idf = ln(1 + (N − n + 0.5)/(n + 0.5))``."""
    docs = [["tea", "green"], ["tea"], ["coffee", "black", "strong"], ["green", "tea", "tea"], ["water"]]
    avg = sum(len(d) + 1 for d in docs) / len(docs)
    enc = LexicalEncoder(avg_len=avg)
    client = QdrantClient(":memory:")
    client.create_collection(
        "c",
        vectors_config={},
        sparse_vectors_config={"s": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    for i, terms in enumerate(docs):
        idx, val = enc.document(terms)
        client.upsert(
            "c", [models.PointStruct(id=i, vector={"s": models.SparseVector(indices=idx, values=val)})]
        )
    query = ["tea", "green"]
    qi, qv = enc.query(query)
    hits = client.query_points(
        "c", query=models.SparseVector(indices=qi, values=qv), using="s", limit=10
    ).points

    def expected(terms: list[str]) -> float:
        weights = dict(zip(*enc.document(terms), strict=True))
        total = 0.0
        for t in set(query):
            n = sum(t in d for d in docs)
            total += math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) * weights.get(term_id(t), 0.0)
        return total

    assert {h.id: round(h.score, 4) for h in hits} == {
        i: round(expected(d), 4) for i, d in enumerate(docs) if set(d) & set(query)
    }


def test_documents_with_neighbours_are_normalised_by_their_own_mean() -> None:
    enc = LexicalEncoder(avg_len=10, context_avg_len=60)
    terms = ["tea", *["x"] * 59]

    def tea(ids_values: tuple[list[int], list[float]]) -> float:
        return dict(zip(*ids_values, strict=True))[term_id("tea")]

    assert tea(enc.document(terms, context=True)) > tea(enc.document(terms))
    single = LexicalEncoder(avg_len=10)
    assert single.document(terms, context=True) == single.document(terms)
    assert LexicalEncoder.for_window(2) == LexicalEncoder(avg_len=20, context_avg_len=120)
    assert LexicalEncoder.for_window(0) == LexicalEncoder(avg_len=20, context_avg_len=20)
    old = {"k1": 1.2, "b": 0.75, "avg_len": 48.0, "hash": "blake2b-32"}  # metadata before context_avg_len
    assert LexicalEncoder.from_json(old) == LexicalEncoder(avg_len=48.0)
    assert LexicalEncoder.from_json(enc.to_json()) == enc
