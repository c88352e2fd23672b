"""Every public entry point of the core raises only ``HelloMemoryError`` subclasses, whatever it is given.

A matrix: each public method of ``MemoryManager`` and of ``RAGPipeline`` (and their constructors, and
``runtime.lock_holder``) is called with each hostile value in each argument, the other arguments
valid. A call may succeed (``search("false")`` is a fine query); it may not raise anything else, and
the stores must be consistent and usable afterwards.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from rel_scan import memory_problems, rag_problems

from hello_memory import MemoryManager, Settings
from hello_memory.errors import HelloMemoryError, InvalidInputError, StoreError
from hello_memory.stores.open import lock_holder
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from rag import RAGPipeline

HOSTILE: list[Any] = [
    None, True, 0, -1, 2**70, 10**400, 1.5, math.nan, math.inf, -math.inf, "", " ", "\x00", "a\x00b",
    "\ud800", "x" * 300_000, b"bytes", bytearray(b"x"), [], [None], ["a", 5], {}, {"a": object()},
    {"content": None}, object(), datetime.max, datetime.min, "9999-12-31T23:59:59-05:00", "false",
    ("a", "b"), {1, 2}, Path("/dev/null"), 1j, ..., type,
]
EMB = DeterministicFakeEmbedder(dimension=16)


@pytest.fixture(scope="module")
def mm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    home = tmp_path_factory.mktemp("hostile") / "data"
    with MemoryManager(Settings(home=home), user_id="alice", enable_perceptual=True, embedder=EMB) as m:
        yield m


def _target(mm: MemoryManager) -> str:
    """A live memory of alice to aim the id-taking methods at (re-added when a call removed it)."""
    live = mm.get_all(memory_type="episodic", limit=1)
    return live[0].id if live else mm.add("target memory", memory_type="episodic").id


def _forgotten(mm: MemoryManager) -> str:
    item = mm.add("to be restored", memory_type="episodic", importance=0.01)
    mm.forget("importance_based", threshold=0.05)
    return item.id


# method name -> (callable taking (mm, **kwargs), valid keyword arguments)
CALLS: dict[str, tuple[Callable[..., Any], Callable[[MemoryManager], dict[str, Any]]]] = {
    "add": (lambda m, **k: m.add(**k), lambda m: {
        "content": "hostile add", "memory_type": "episodic", "importance": 0.5, "user_id": "alice",
        "session_id": "s1", "created_at": None, "metadata": {"k": 1}, "memory_id": None, "tags": ["t"]}),
    "add_many": (lambda m, **k: m.add_many(**k), lambda m: {"items": [{"content": "batch item"}]}),
    "add_many-item": (lambda m, **k: m.add_many([{"content": "one", **k}]), lambda m: {
        "memory_type": "episodic", "importance": 0.4, "metadata": {}, "created_at": "2024-01-01T00:00:00",
        "memory_id": None, "session_id": None}),
    "get": (lambda m, **k: m.get(**k), lambda m: {"memory_id": _target(m), "user_id": None,
                                                   "include_deleted": False}),
    "get_all": (lambda m, **k: m.get_all(**k), lambda m: {"user_id": None, "memory_type": None, "limit": 5,
                                                           "include_deleted": False}),
    "search": (lambda m, **k: m.search(**k), lambda m: {
        "query": "yesterday with Alice", "user_id": None, "memory_types": None, "limit": 5,
        "min_importance": 0.0, "min_score": None, "time_range": None, "session_id": None,
        "reference_time": None}),
    "history": (lambda m, **k: m.history(**k), lambda m: {"memory_id": _target(m), "user_id": None}),
    "update": (lambda m, **k: m.update(**k), lambda m: {"memory_id": _target(m), "content": "updated",
                                                         "importance": 0.6, "metadata": None, "user_id": None}),
    "remove": (lambda m, **k: m.remove(**k), lambda m: {"memory_id": _target(m), "user_id": None}),
    "restore": (lambda m, **k: m.restore(**k), lambda m: {"memory_id": _forgotten(m), "user_id": None}),
    "forget": (lambda m, **k: m.forget(**k), lambda m: {
        "strategy": "importance_based", "threshold": 0.0, "max_age_days": 30, "capacity": None,
        "memory_types": None, "user_id": None, "purge": False}),
    "consolidate": (lambda m, **k: m.consolidate(**k), lambda m: {
        "from_type": "working", "to_type": "episodic", "importance_threshold": 0.99, "user_id": None}),
    "clear_all": (lambda m, **k: m.clear_all(**k), lambda m: {"user_id": "nobody"}),
    "forget_user": (lambda m, **k: m.forget_user(**k), lambda m: {"user_id": "nobody"}),
    "stats": (lambda m, **k: m.stats(**k), lambda m: {"user_id": None}),
    "summary": (lambda m, **k: m.summary(**k), lambda m: {"limit": 3, "user_id": None}),
    "build_context": (lambda m, **k: m.build_context(**k), lambda m: {
        "query": "Alice", "budget_tokens": 200, "floor": None, "position": "user", "user_id": None,
        "limit": 5}),
}


def test_every_public_method_raises_only_hello_memory_errors(mm: MemoryManager) -> None:
    untyped: list[str] = []
    calls = 0
    for name, (call, valid) in CALLS.items():
        for arg in valid(mm):
            for value in HOSTILE:
                kwargs = {**valid(mm), arg: value}
                calls += 1
                try:
                    call(mm, **kwargs)
                except HelloMemoryError:
                    pass
                except BaseException as e:  # the point of the test: anything else is a finding
                    untyped.append(f"{name}({arg}={value!r:.40}): {type(e).__name__}: {e!s:.120}")
    assert not untyped, f"{len(untyped)} of {calls} calls raised untyped errors:\n" + "\n".join(untyped[:40])
    assert calls > 1500
    assert memory_problems(mm.bundle.home, mm.bundle.vectors) == []
    item = mm.add("still usable after the hostile matrix", memory_type="episodic")
    assert mm.search("still usable after the hostile matrix")[0].item.id == item.id


CONSTRUCTOR = {
    "settings": [5, "settings", {}, object()],
    "user_id": [None, 5, "", "\x00", "\ud800", "x" * 1000],
    "enable_working": ["false", 0, None],
    "embedder": [5, "e5", object()],
    "vector_store": [5, "qdrant", object()],
    "graph_store": [5, object()],
    "llm": [5, "gpt", object()],
}


@pytest.mark.parametrize(("arg", "value"), [(a, v) for a, vs in CONSTRUCTOR.items() for v in vs])
def test_constructor_arguments_are_checked(tmp_path: Path, arg: str, value: Any) -> None:
    kwargs: dict[str, Any] = {"home": tmp_path / "data", "embedder": EMB}
    kwargs[arg] = value
    settings = kwargs.pop("settings", None)
    with pytest.raises(InvalidInputError, match=arg.split("_")[0]):
        MemoryManager(settings, **kwargs)
    assert lock_holder(tmp_path / "data") is None  # nothing left holding the directory


def _homes(tmp_path: Path) -> dict[str, Any]:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    return {
        "nul": "a\x00b", "int": 5, "float": 1.5, "list": ["a"], "bytes": b"/tmp/x", "empty": "", "blank": "  ",
        "surrogate": "bad\ud800dir", "file": a_file, "under-file": a_file / "sub", "dev-null": "/dev/null",
        "proc": "/proc/self/nope", "too-long": "/tmp/" + "x" * 5000, "long-name": tmp_path / ("n" * 300),
        "symlink-loop": loop / "data",
    }


@pytest.mark.parametrize(
    "name",
    ["nul", "int", "float", "list", "bytes", "empty", "blank", "surrogate", "file", "under-file", "dev-null",
     "proc", "too-long", "long-name", "symlink-loop"],
)
def test_hostile_homes_raise_typed_errors(tmp_path: Path, name: str) -> None:
    home = _homes(tmp_path)[name]
    with pytest.raises(HelloMemoryError) as caught:
        MemoryManager(home=home, embedder=EMB)
    assert isinstance(caught.value, InvalidInputError | StoreError)
    with pytest.raises(HelloMemoryError):
        MemoryManager(Settings(home=Path("/")).model_copy(update={"home": home}), embedder=EMB)
    for make in (lambda: RAGPipeline(home=home, embedder=EMB, llm=None),  # the same errors as MemoryManager
                 lambda: RAGPipeline(Settings(home=Path("/")).model_copy(update={"home": home}), embedder=EMB)):
        with pytest.raises(HelloMemoryError) as caught:
            make()
        assert isinstance(caught.value, InvalidInputError | StoreError)
    with contextlib.suppress(HelloMemoryError):
        assert lock_holder(home) is None  # a directory that does not exist is held by nobody


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory on a read-only filesystem (root ignores permission bits, so mount one)."""
    target = tmp_path / "ro"
    target.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(target)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


@pytest.mark.parametrize("sub", ["", "new/data"])
def test_read_only_home_raises_store_error(read_only_dir: Path, sub: str) -> None:
    home = read_only_dir / sub if sub else read_only_dir
    with pytest.raises(StoreError, match="data directory"):
        MemoryManager(home=home, embedder=EMB)
    with pytest.raises(StoreError, match="data directory"):
        RAGPipeline(home=home, embedder=EMB, llm=None)
    assert not os.listdir(read_only_dir)


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RAGPipeline]:
    home = tmp_path_factory.mktemp("hostile-rag") / "data"
    with RAGPipeline(Settings(home=home), namespace="kb", embedder=EMB, llm=None) as k:
        k.add_text("# Seed\n\nA seed document about green tea.", document_id="seed")
        yield k


def _document(k: RAGPipeline) -> str:
    """A document of the namespace to aim ``delete_document`` at (re-added when a call deleted it)."""
    k.add_text("# Victim\n\nA document to delete.", document_id="victim")
    return "victim"


def _file(k: RAGPipeline) -> Path:
    path = k.bundle.home.parent / "notes.md"
    path.write_text("# Notes\n\nOolong is a partly oxidised tea.", encoding="utf-8")
    return path


RAG_CALLS: dict[str, tuple[Callable[..., Any], Callable[[RAGPipeline], dict[str, Any]]]] = {
    "add_document": (lambda k, **kw: k.add_document(**kw), lambda k: {
        "path": _file(k), "document_id": None, "chunk_tokens": None, "overlap_tokens": None, "metadata": None,
        "progress": None, "source_path": None}),
    "add_text": (lambda k, **kw: k.add_text(**kw), lambda k: {
        "text": "# Hostile\n\nhostile text", "document_id": None, "source": None, "chunk_tokens": 64,
        "overlap_tokens": 8, "metadata": {"k": 1}, "progress": None}),
    "delete_document": (lambda k, **kw: k.delete_document(**kw), lambda k: {"document_id": _document(k)}),
    "search": (lambda k, **kw: k.search(**kw), lambda k: {
        "query": "green tea", "limit": 5, "min_score": None, "enable_mqe": False, "enable_hyde": False}),
    "ask": (lambda k, **kw: k.ask(**kw), lambda k: {
        "question": "which tea?", "limit": 3, "enable_mqe": False, "enable_hyde": False, "min_score": None,
        "budget_tokens": 300}),
}


def test_every_public_rag_method_raises_only_hello_memory_errors(kb: RAGPipeline) -> None:
    untyped: list[str] = []
    calls = 0
    for name, (call, valid) in RAG_CALLS.items():
        for arg in valid(kb):
            for value in HOSTILE:
                calls += 1
                try:
                    call(kb, **{**valid(kb), arg: value})
                except HelloMemoryError:
                    pass
                except BaseException as e:  # the point of the test: anything else is a finding
                    untyped.append(f"{name}({arg}={value!r:.40}): {type(e).__name__}: {e!s:.120}")
    for method in (kb.list_documents, kb.stats, kb.clear):
        method()
    assert not untyped, f"{len(untyped)} of {calls} calls raised untyped errors:\n" + "\n".join(untyped[:40])
    assert calls > 800
    assert rag_problems(kb.bundle.home, kb.bundle.vectors) == []
    kb.add_text("# After\n\nstill usable after the hostile matrix", document_id="after")
    assert kb.search("still usable after the hostile matrix").hits[0].document_id == "after"


RAG_CONSTRUCTOR = {
    "settings": [5, "settings", {}, object()],
    "namespace": [None, 5, "", "\x00", "\ud800", "x" * 1000],
    "embedder": [5, "e5", object()],
    "vector_store": [5, "qdrant", object()],
    "llm": [5, "gpt", object()],
}


@pytest.mark.parametrize(("arg", "value"), [(a, v) for a, vs in RAG_CONSTRUCTOR.items() for v in vs])
def test_rag_constructor_arguments_are_checked(tmp_path: Path, arg: str, value: Any) -> None:
    kwargs: dict[str, Any] = {"home": tmp_path / "data", "embedder": EMB, "llm": None}
    kwargs[arg] = value
    settings = kwargs.pop("settings", None)
    with pytest.raises(InvalidInputError, match=arg.split("_")[0]):
        RAGPipeline(settings, **kwargs)
    assert lock_holder(tmp_path / "data") is None  # nothing left holding the directory


@pytest.mark.parametrize("progress", [lambda: None, lambda a, b, c: None, lambda *, done: None, type, int],
                         ids=["no-args", "three-args", "keyword-only", "type", "a-class"])
def test_a_progress_callback_that_cannot_take_done_and_total_is_refused_before_indexing(kb, progress):
    before = kb.stats().documents
    with pytest.raises(InvalidInputError, match="progress"):
        kb.add_text("# Progress\n\nnever indexed", document_id="progress", progress=progress)
    seen: list[tuple[int, int]] = []
    kb.add_text("# Progress\n\nindexed", document_id="progress", progress=lambda d, t: seen.append((d, t)))
    assert kb.stats().documents == before + 1 and seen and seen[-1][0] == seen[-1][1]
    kb.delete_document("progress")
