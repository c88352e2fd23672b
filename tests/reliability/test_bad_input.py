"""Bad-input corpus: every hostile argument gets a typed error, stores nothing and harms nothing.

Each case runs against one shared data directory: the raw row/point counts of every store must be
the same before and after the call, and a normal add + search must work after it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from bad_files import build_bad_files
from rel_scan import memory_problems, rag_problems, rows, tables

from hello_memory import MemoryManager, Settings
from hello_memory.errors import ConversionError, HelloMemoryError, InvalidInputError, NotFoundError
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from rag import RAGPipeline
from rag.chunking import MAX_TITLE_CHARS


@dataclass
class Env:
    home: Path
    files: dict[str, Path]
    mm: MemoryManager
    no_perceptual: MemoryManager
    rag: RAGPipeline
    bob_id: str
    alice_id: str
    other_doc: str


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("bad-input")
    home, emb = root / "data", DeterministicFakeEmbedder(dimension=32)
    settings = Settings(home=home, chunk_tokens=40, overlap_tokens=5)
    mm = MemoryManager(settings, user_id="alice", enable_perceptual=True, embedder=emb)
    no_perc = MemoryManager(settings, user_id="alice", embedder=emb)
    rag = RAGPipeline(settings, namespace="kb", embedder=emb, llm=None)
    other_ns = RAGPipeline(settings, namespace="other", embedder=emb, llm=None)
    alice = mm.add("Alice lives in Paris", memory_type="semantic")
    bob = mm.add("Bob's secret diary entry", memory_type="episodic", user_id="bob")
    rag.add_text("# Guide\n\nReset the password from the settings page.", document_id="guide")
    other_ns.add_text("# Other\n\nAnother namespace's document.", document_id="secret-doc")
    other_ns.close()
    yield Env(home, build_bad_files(root / "files"), mm, no_perc, rag, bob.id, alice.id, "secret-doc")
    for x in (rag, no_perc, mm):
        x.close()


def snapshot(env: Env) -> dict[str, int]:
    """Row counts of every table of every SQLite file and point counts of every collection."""
    out: dict[str, int] = {}
    for db in ("records.db", "graph.db", "rag.db"):
        for t in tables(env.home / db):
            out[f"{db}:{t}"] = rows(env.home / db, f'SELECT COUNT(*) FROM "{t}"')[0][0]
    vectors = env.mm.bundle.vectors
    for c in vectors.collections():
        out[f"vectors:{c}"] = vectors.count(c)
    return out


def assert_usable(env: Env) -> None:
    """A normal add + search and a RAG search still work (each case adds one memory; that is fine)."""
    text = f"usable after bad input {len(env.mm.get_all(limit=10**6))}: green tea"
    item = env.mm.add(text, memory_type="episodic")
    assert env.mm.search(text)[0].item.id == item.id
    assert env.rag.search("reset the password").hits[0].document_id == "guide"


NAN, INF = float("nan"), float("inf")
LONE_SURROGATE = "bad \ud800 text"


def _deep(depth: int, kind: str = "dict") -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value} if kind == "dict" else [value]
    return value


Call = Callable[[Env], Any]
CASES: list[tuple[str, Call, type[BaseException]]] = []


def case(name: str, fn: Call, expected: type[BaseException] = HelloMemoryError) -> None:
    CASES.append((name, fn, expected))


# -- MemoryManager.add: content x every tier -------------------------------------------------------
BAD_CONTENT: dict[str, Any] = {
    "empty": "", "spaces": "   ", "newlines": "\n\t\r\n", "none": None, "int": 123, "float": 1.5,
    "bool": True, "bytes": b"bytes", "bytearray": bytearray(b"x"), "list": ["text"], "dict": {"a": 1},
    "huge": "x" * 200_001, "nul": "a\x00b", "lone-surrogate": LONE_SURROGATE, "only-surrogate": "\udfff",
    "object": object(),
}
for _t in ("working", "episodic", "semantic", "perceptual"):
    for _k, _v in BAD_CONTENT.items():
        case(f"add-content-{_k}-{_t}", lambda e, v=_v, t=_t: e.mm.add(v, memory_type=t))

for _k, _v in {
    "nan": NAN, "inf": INF, "-inf": -INF, "negative": -0.01, "above-one": 1.01, "two": 2, "minus-one": -1,
    "string": "0.5", "none": None, "bool-true": True, "bool-false": False, "list": [0.5], "complex": 1j,
    "huge-int": 10**400,
}.items():
    case(f"add-importance-{_k}", lambda e, v=_v: e.mm.add("fine text", memory_type="episodic", importance=v))

for _k, _v in {
    "unknown": "procedural", "empty": "", "upper": "WORKING", "padded": " episodic", "int": 5,
    "list": ["semantic"], "nul": "episodic\x00",
}.items():  # None is the default (working for a text, episodic for a conversation: issue 26)
    case(f"add-memory-type-{_k}", lambda e, v=_v: e.mm.add("fine text", memory_type=v))
case("add-memory-type-disabled", lambda e: e.no_perceptual.add("a photo", memory_type="perceptual"))

for _k, _v in {
    "empty": "", "spaces": "   ", "int": 5, "too-long": "u" * 257, "newline": "a\nb", "nul": "a\x00",
    "list": ["alice"], "bytes": b"alice", "lone-surrogate": "\ud800",
}.items():
    case(f"add-user-id-{_k}", lambda e, v=_v: e.mm.add("fine text", user_id=v))
    case(f"search-user-id-{_k}", lambda e, v=_v: e.mm.search("fine", user_id=v))
for _k, _v in {"empty": "", "int": 5, "control": "s\x01", "too-long": "s" * 300,
               "lone-surrogate": "s\udc80"}.items():
    case(f"add-session-id-{_k}", lambda e, v=_v: e.mm.add("fine text", session_id=v))
for _k, _v in {"garbage": "not a date", "bad-month": "2024-13-45", "int": 12345, "list": [], "dict": {},
               "word": "yesterday", "nan": NAN}.items():
    case(f"add-created-at-{_k}", lambda e, v=_v: e.mm.add("fine text", created_at=v))
for _k, _v in {
    "string": "meta", "list": [1, 2], "int": 5, "nan": {"a": NAN}, "inf": {"a": INF}, "object": {"a": object()},
    "set": {"a": {1, 2}}, "bytes": {"a": b"x"}, "too-big": {"big": "x" * 70_000}, "deep-dict": _deep(10_000),
    "deep-list": {"a": _deep(100_000, "list")}, "tuple-key": {(1, 2): "v"}, "surrogate-value": {"a": "\ud800"},
    "surrogate-key": {"\udfff": 1},
}.items():
    case(f"add-metadata-{_k}", lambda e, v=_v: e.mm.add("fine text", metadata=v))
for _k, _v in {
    "unknown": {"foo": 1}, "id": {"id": "x"}, "user": {"user": "x"}, "deleted-at": {"deleted_at": "2024-01-01"},
    "tags-int": {"tags": 5}, "participants-int": {"participants": 5},
    "participants-blank": {"participants": ["Ann", "  "]}, "participants-str": {"participants": "Ann"},
    "participants-none-item": {"participants": [None]}, "valid-from": {"valid_from": "garbage"},
    "event-type-list": {"event_type": ["a"]}, "context-surrogate": {"context": "\ud800"},
    "tags-surrogate": {"tags": ["\udfff"]}, "tags-huge": {"tags": ["t" * 1000] * 1000},
    "outcome-huge": {"outcome": "o" * 1_000_000}, "agent-id-nul": {"agent_id": "a\x00"},
}.items():
    case(f"add-field-{_k}", lambda e, v=_v: e.mm.add("fine text", memory_type="episodic", **v))
case("add-perceptual-modality", lambda e: e.mm.add("a smell", memory_type="perceptual", modality="smell"))
case("add-perceptual-source-int", lambda e: e.mm.add("a photo", memory_type="perceptual", source_path=5))
case("add-perceptual-file-path-meta-int",
     lambda e: e.mm.add("a photo", memory_type="perceptual", metadata={"file_path": 5}))
case("add-perceptual-source-surrogate",
     lambda e: e.mm.add("a photo", memory_type="perceptual", source_path="/p/\ud800.jpg"))

# -- add_many: all validated before any is stored ---------------------------------------------------
for _k, _v in {
    "none": None, "int": 5, "string": "abc", "list-of-int": [5], "no-content": [{"memory_type": "episodic"}],
    "second-bad": [{"content": "ok one"}, {"content": ""}], "last-bad-importance":
        [{"content": "ok"}, {"content": "ok2"}, {"content": "x", "importance": NAN}],
    "unknown-key": [{"content": "ok", "colour": "red"}], "bad-user": [{"content": "ok", "user_id": ""}],
    "generator-bad": ({"content": c} for c in ("ok", None)),
}.items():
    case(f"add-many-{_k}", lambda e, v=_v: e.mm.add_many(v))

# -- ids: other users', unknown, malformed ----------------------------------------------------------
_ID_OPS: dict[str, Callable[[MemoryManager, Any], Any]] = {
    "get": lambda m, i: m.get(i), "update": lambda m, i: m.update(i, content="stolen"),
    "remove": lambda m, i: m.remove(i), "restore": lambda m, i: m.restore(i),
    "history": lambda m, i: m.history(i),
}
for _op, _fn in _ID_OPS.items():  # history too: an id that is not the user's is not found (issue 27 §4)
    case(f"{_op}-other-users-id", lambda e, f=_fn: f(e.mm, e.bob_id), NotFoundError)
    case(f"{_op}-unknown-uuid", lambda e, f=_fn: f(e.mm, "00000000-0000-4000-8000-000000000000"),
         NotFoundError)
    for _k, _v in {"empty": "", "none": None, "int": 5, "too-long": "x" * 300, "control": "id\x07"}.items():
        case(f"{_op}-id-{_k}", lambda e, f=_fn, v=_v: f(e.mm, v), InvalidInputError)
case("update-as-owner-of-other-user", lambda e: e.mm.update(e.bob_id, importance=0.9, user_id="alice"),
     NotFoundError)
case("get-alice-id-as-bob", lambda e: e.mm.get(e.alice_id, user_id="bob"), NotFoundError)

# -- update arguments -------------------------------------------------------------------------------
for _k, _kw in {
    "nothing": {}, "empty-content": {"content": ""}, "bytes-content": {"content": b"x"},
    "nan-importance": {"importance": NAN}, "metadata-list": {"metadata": [1]},
    "metadata-nan": {"metadata": {"x": NAN}}, "huge-content": {"content": "y" * 200_001},
    "surrogate-content": {"content": LONE_SURROGATE},
}.items():
    case(f"update-{_k}", lambda e, kw=_kw: e.mm.update(e.alice_id, **kw))

# -- search arguments -------------------------------------------------------------------------------
for _k, _kw in {
    "query-empty": {"query": ""}, "query-none": {"query": None}, "query-int": {"query": 5},
    "query-huge": {"query": "q" * 20_001}, "query-surrogate": {"query": "\ud800"},
    "limit-zero": {"limit": 0}, "limit-negative": {"limit": -1}, "limit-huge": {"limit": 1001},
    "limit-float": {"limit": 1.5}, "limit-string": {"limit": "5"}, "limit-bool": {"limit": True},
    "limit-none": {"limit": None}, "min-importance-nan": {"min_importance": NAN},
    "min-importance-negative": {"min_importance": -1}, "min-importance-two": {"min_importance": 2},
    "min-importance-string": {"min_importance": "high"}, "min-score-string": {"min_score": "abc"},
    "min-score-nan": {"min_score": NAN}, "min-score-list": {"min_score": [1]},
    "types-unknown": {"memory_types": ["bogus"]}, "types-string-unknown": {"memory_types": "bogus"},
    "types-int": {"memory_types": [5]}, "types-none-item": {"memory_types": [None]},
    "types-int-not-list": {"memory_types": 5},
    "time-range-garbage": {"time_range": ("bad", None)}, "time-range-triple": {"time_range": (1, 2, 3)},
    "time-range-string": {"time_range": "2024"}, "time-range-int": {"time_range": 5},
    "time-range-reversed": {"time_range": (datetime(2025, 1, 1, tzinfo=timezone.utc),
                                           datetime(2024, 1, 1, tzinfo=timezone.utc))},
    "time-range-ints": {"time_range": (1, 2)}, "session-empty": {"session_id": ""},
    "session-int": {"session_id": 5},
}.items():
    case(f"search-{_k}", lambda e, kw=_kw: e.mm.search(**{"query": "Alice", **kw}))

# -- lifecycle and reports ----------------------------------------------------------------------------
for _k, _kw in {
    "strategy": {"strategy": "bogus"}, "strategy-none": {"strategy": None},
    "threshold-nan": {"threshold": NAN}, "threshold-two": {"threshold": 2},
    "max-age-negative": {"max_age_days": -1}, "max-age-nan": {"max_age_days": NAN},
    "max-age-string": {"max_age_days": "30"}, "capacity-negative": {"capacity": -1},
    "capacity-float": {"capacity": 1.5}, "types-bogus": {"memory_types": ["bogus"]},
}.items():
    case(f"forget-{_k}", lambda e, kw=_kw: e.mm.forget(**kw))
for _k, _a in {
    "from-bogus": ("bogus", "episodic", 0.7), "to-bogus": ("working", "bogus", 0.7),
    "same": ("episodic", "episodic", 0.7), "threshold-nan": ("working", "episodic", NAN),
    "threshold-string": ("working", "episodic", "high"), "to-disabled": ("working", "perceptual", 0.5),
}.items():
    mgr = "no_perceptual" if _k == "to-disabled" else "mm"
    case(f"consolidate-{_k}", lambda e, a=_a, m=mgr: getattr(e, m).consolidate(*a))
for _k, _kw in {
    "position": {"position": "assistant"}, "budget-zero": {"budget_tokens": 0},
    "budget-negative": {"budget_tokens": -5}, "budget-string": {"budget_tokens": "100"},
    "budget-bool": {"budget_tokens": True}, "query-empty": {"query": ""}, "limit-zero": {"limit": 0},
    "floor-string": {"floor": "high"},
}.items():
    case(f"build-context-{_k}", lambda e, kw=_kw: e.mm.build_context(**{"query": "Alice", **kw}))
for _k, _fn in {
    "summary-limit-zero": lambda e: e.mm.summary(limit=0), "summary-limit-string": lambda e: e.mm.summary("5"),
    "get-all-limit-zero": lambda e: e.mm.get_all(limit=0), "get-all-type-bogus": lambda e: e.mm.get_all(
        memory_type="bogus"), "get-all-type-disabled": lambda e: e.no_perceptual.get_all(memory_type="perceptual"),
    "stats-user-empty": lambda e: e.mm.stats(user_id=""), "clear-all-user-empty": lambda e: e.mm.clear_all(""),
    "clear-all-user-int": lambda e: e.mm.clear_all(5), "forget-user-empty": lambda e: e.mm.forget_user(""),
    "forget-user-none": lambda e: e.mm.forget_user(None), "forget-user-control": lambda e: e.mm.forget_user("\x1b"),
    "manager-no-tiers": lambda e: MemoryManager(e.mm.settings, enable_working=False, enable_episodic=False,
                                                 enable_semantic=False, embedder=e.mm.embedder),
    "manager-bad-user": lambda e: MemoryManager(e.mm.settings, user_id="", embedder=e.mm.embedder),
}.items():
    case(_k, _fn)

# -- RAGPipeline ---------------------------------------------------------------------------------------
for _k, _kw in {
    "text-empty": {"text": ""}, "text-none": {"text": None}, "text-int": {"text": 5},
    "text-bytes": {"text": b"# doc"}, "text-surrogate": {"text": "# T\n\n\ud800"}, "text-nul": {"text": "a\x00b"},
    "doc-id-empty": {"document_id": ""}, "doc-id-int": {"document_id": 5}, "doc-id-long": {"document_id": "d" * 300},
    "doc-id-newline": {"document_id": "a\nb"}, "chunk-zero": {"chunk_tokens": 0},
    "chunk-negative": {"chunk_tokens": -1},
    "chunk-string": {"chunk_tokens": "400"}, "chunk-float": {"chunk_tokens": 1.5}, "chunk-bool": {"chunk_tokens": True},
    "overlap-negative": {"overlap_tokens": -1}, "overlap-too-big": {"chunk_tokens": 10, "overlap_tokens": 10},
    "metadata-nan": {"metadata": {"x": NAN}}, "metadata-string": {"metadata": "m"},
    "metadata-deep": {"metadata": _deep(10_000)}, "metadata-surrogate": {"metadata": {"x": "\ud800"}},
    "source-surrogate": {"source": "\ud800.md"},
}.items():
    case(f"rag-add-text-{_k}", lambda e, kw=_kw: e.rag.add_text(**{"text": "# Fine\n\nfine text", **kw}))
for _k, _fn in {
    "delete-unknown": lambda e: e.rag.delete_document("nope"),
    "delete-other-namespace": lambda e: e.rag.delete_document(e.other_doc),
    "delete-empty": lambda e: e.rag.delete_document(""), "delete-int": lambda e: e.rag.delete_document(5),
    "search-empty": lambda e: e.rag.search(""), "search-none": lambda e: e.rag.search(None),
    "search-limit-zero": lambda e: e.rag.search("x", limit=0), "search-limit-huge": lambda e: e.rag.search(
        "x", limit=201), "search-min-score-string": lambda e: e.rag.search("x", min_score="abc"),
    "search-min-score-nan": lambda e: e.rag.search("x", min_score=NAN),
    "ask-empty": lambda e: e.rag.ask(""), "ask-budget-negative": lambda e: e.rag.ask("x", budget_tokens=-1),
    "ask-budget-string": lambda e: e.rag.ask("x", budget_tokens="3000"),
    "add-document-metadata-nan": lambda e: e.rag.add_document(e.files["good-md"], metadata={"x": NAN}),
    "add-document-doc-id-empty": lambda e: e.rag.add_document(e.files["good-md"], document_id=""),
    "add-document-chunk-zero": lambda e: e.rag.add_document(e.files["good-md"], chunk_tokens=0),
    "namespace-empty": lambda e: RAGPipeline(e.rag.settings, namespace="", embedder=e.rag.embedder, llm=None),
    "namespace-control": lambda e: RAGPipeline(e.rag.settings, namespace="a\x00", embedder=e.rag.embedder, llm=None),
    "add-document-int-path": lambda e: e.rag.add_document(5),
    "add-document-none-path": lambda e: e.rag.add_document(None),
}.items():
    case(f"rag-{_k}", _fn)

FILE_CASES = [
    "empty-txt", "empty-md", "whitespace-md", "binary-txt", "nul-bytes-md", "invalid-utf8-md",
    "invalid-utf16-bom", "control-chars-txt", "utf8-bom-then-binary", "binary-json", "binary-html",
    "binary-csv", "binary-py", "exe-extension", "no-extension", "zip-extension", "unknown-extension",
    "random-pdf", "header-only-pdf", "truncated-pdf", "encrypted-pdf", "pdf-as-docx",
    *[f"{v}-{ext}" for ext in ("docx", "xlsx", "pptx") for v in (
        "random", "truncated", "empty-zip", "no-main-part", "ole2-encrypted", "ratio-bomb", "lying-size-bomb",
        "encrypted-member", "garbage-main-part", "understated-size-bomb")],
    "members-bomb-docx", "random-xls", "ole2-junk-xls", "random-jpg", "random-wav",
    "directory", "dev-null", "dev-zero", "dev-urandom", "fifo", "symlink-to-dir", "symlink-dangling",
    "symlink-to-dev-zero", "symlink-to-fifo", "symlink-loop", "missing", "missing-parent", "oversized-sparse",
    "nul-in-path", "very-long-name",
]
for _k in FILE_CASES:
    case(f"file-{_k}", lambda e, k=_k: e.rag.add_document(e.files[k]), ConversionError)


@pytest.mark.parametrize(("fn", "expected"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_refused_cleanly(env: Env, fn: Call, expected: type[BaseException]) -> None:
    before = snapshot(env)
    started = time.monotonic()
    with pytest.raises(HelloMemoryError) as info:
        fn(env)
    assert isinstance(info.value, expected), f"{type(info.value).__name__}: {info.value}"
    assert str(info.value).strip(), "the error must say what is wrong"
    assert time.monotonic() - started < 30, "refusing bad input must be quick"
    assert snapshot(env) == before, "nothing may be stored by a refused call"
    assert_usable(env)


def test_history_of_another_users_memory_is_not_found(env: Env) -> None:
    with pytest.raises(NotFoundError):  # like get (issue 27 §4)
        env.mm.history(env.bob_id)
    assert env.mm.history(env.bob_id, user_id="bob") != []


def test_corpus_size() -> None:
    assert len(CASES) >= 200
    assert len({c[0] for c in CASES}) == len(CASES)


# -- valid but pathological: must finish quickly, stay consistent, and be deletable --------------------
PATHOLOGICAL_MARKDOWN = {
    "hash-line": "#" * 100_000,
    "many-empty-headings": "# " * 50_000,
    "heading-churn": "\n".join("#" * (i % 6 + 1) + f" h{i}" for i in range(20_000)),
    "giant-heading": "# " + "x" * 100_000,
    "seven-hashes": "####### not a heading\n" * 10_000,
    "heading-ladder": "# a\n## b\n### c\n#### d\n##### e\n###### f\n" * 3_000,
    "unclosed-fence": "```\n" + "# not a heading\n" * 10_000,
    "setext": "Title\n=====\n\nSub\n---\n" * 5_000,
    "cjk-heading": "# " + "标题" * 10_000 + "\n\n正文" * 100,
    "crlf-mixed": "# A\r\n\r\ntext\r## B\n\ntext\r\n" * 5_000,
    "nested-json-text": "[" * 50_000 + "]" * 50_000,
    "one-giant-token": "a" * 1_000_000,
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL_MARKDOWN))
def test_pathological_markdown_indexes_quickly(env: Env, name: str) -> None:
    started = time.monotonic()
    report = env.rag.add_text(PATHOLOGICAL_MARKDOWN[name], document_id=f"patho-{name}")
    assert time.monotonic() - started < 60
    assert report.chunks >= 1
    chunks = env.rag.store.get_chunks("kb", document_id=report.document_id).values()
    assert all(len(c.text) <= 40 * 64 + 200 for c in chunks), "a chunk far over its budget"
    assert all(len(c.heading_path) <= 6 * (MAX_TITLE_CHARS + 3) for c in chunks), "heading path unbounded"
    stored = sum(len(c.text) + len(c.heading_path) for c in chunks)  # linear in the input, never quadratic
    assert stored <= 8 * len(PATHOLOGICAL_MARKDOWN[name]) + 10_000, f"{stored} chars stored: amplification"
    assert rag_problems(env.home, env.rag.bundle.vectors) == []
    env.rag.delete_document(report.document_id)
    assert_usable(env)


def test_deeply_nested_json_file_is_read_as_code(env: Env, tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    report = env.rag.add_document(path)
    assert report.format == "json" and report.chunks >= 1
    env.rag.delete_document(report.document_id)


def test_store_is_consistent_after_the_corpus(env: Env) -> None:
    assert memory_problems(env.home, env.mm.bundle.vectors) == []
    assert rag_problems(env.home, env.mm.bundle.vectors) == []
    assert not math.isnan(env.mm.stats().avg_importance)


def test_file_name_that_is_not_utf8_is_indexed_with_a_readable_path(env: Env, tmp_path: Path) -> None:
    raw = bytes(tmp_path) + b"/caf\xe9-notes.md"  # a Latin-1 file name: undecodable as UTF-8
    with open(raw, "wb") as f:
        f.write(b"# Notes\n\nThe caf\xc3\xa9 opens at nine.")
    report = env.rag.add_document(Path(raw.decode("utf-8", "surrogateescape")))
    assert report.source_path is not None and "\ufffd" in report.source_path
    assert env.rag.search("opens at nine").hits[0].document_id == report.document_id
    env.rag.delete_document(report.document_id)
