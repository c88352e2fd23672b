"""Concurrency: 8 threads on one data directory, and a second process that must be refused."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rel_scan import memory_collections, memory_problems, rag_problems, rows

from hello_memory import MemoryManager, Settings
from hello_memory.errors import StoreLockedError
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from rag import RAGPipeline

SEED = 7
THREADS = 8
OPS_PER_THREAD = 120
DEADLINE_S = 8.0
TYPES = ("working", "episodic", "semantic", "perceptual")


def _settings(home: Path) -> Settings:
    return Settings(home=home, working_capacity=100_000, working_token_budget=10_000_000,
                    chunk_tokens=40, overlap_tokens=5)


@dataclass
class Model:
    """One thread's expectation of its user's memories."""

    live: dict[str, float] = field(default_factory=dict)  # id -> importance
    forgotten: set[str] = field(default_factory=set)
    ops: int = 0


def _worker(mm: MemoryManager, model: Model, rng: random.Random, stop: float, errors: list[str],
            max_ops: int = OPS_PER_THREAD) -> None:
    try:
        while model.ops < max_ops and time.monotonic() < stop:
            model.ops += 1
            _op(mm, model, rng, f"{mm.user_id} op{model.ops}")
    except Exception as e:  # every exception fails the test, with its thread and step
        errors.append(f"{mm.user_id} op {model.ops}: {type(e).__name__}: {e}")


def _op(mm: MemoryManager, model: Model, rng: random.Random, tag: str) -> None:
    r = rng.random()
    if r < 0.35 or not model.live:
        t = rng.choice(TYPES)
        imp = round(rng.uniform(0.05, 1.0), 3)
        extra = {"source_path": "/m/p.png"} if t == "perceptual" else {}
        item = mm.add(f"{tag} Alice visited Paris with item {rng.random()}", memory_type=t, importance=imp,
                      **extra)
        model.live[item.id] = imp
    elif r < 0.42:
        items = mm.add_many([{"content": f"{tag} batch {i}", "memory_type": "episodic",
                              "importance": 0.6} for i in range(3)])
        model.live.update({it.id: 0.6 for it in items})
    elif r < 0.62:
        hits = mm.search(f"{tag} Alice Paris", limit=rng.randint(1, 20))
        leaked = [h.item.id for h in hits if h.item.id not in model.live]
        assert not leaked, f"search returned ids not live for {mm.user_id}: {leaked}"
    elif r < 0.74:
        mid = rng.choice(sorted(model.live))
        imp = round(rng.uniform(0.05, 1.0), 3)
        mm.update(mid, content=f"{tag} updated {rng.random()}", importance=imp)
        model.live[mid] = imp
    elif r < 0.84:
        mid = rng.choice(sorted(model.live))
        mm.remove(mid)
        del model.live[mid]
    elif r < 0.90:
        threshold = round(rng.uniform(0.0, 0.3), 3)
        report = mm.forget("importance_based", threshold=threshold)
        victims = {i for i, imp in model.live.items() if imp < threshold}
        assert {f.id for f in report.forgotten} == victims
        for i in victims:
            del model.live[i]
        model.forgotten |= victims
    else:
        assert mm.stats().total == len(model.live)


def _check_end_state(home: Path, mm: MemoryManager, models: dict[str, Model]) -> None:
    for user, model in models.items():
        live = {it.id for it in mm.get_all(user_id=user, limit=10**6)}
        assert live == set(model.live), f"{user}: lost {set(model.live) - live}, extra {live - set(model.live)}"
        everything = {it.id for it in mm.get_all(user_id=user, include_deleted=True, limit=10**6)}
        assert everything - live == model.forgotten, user
    assert memory_problems(home, mm.bundle.vectors) == []
    rec = home / "records.db"
    live_vec = rows(rec, "SELECT COUNT(*) FROM memories WHERE deleted_at IS NULL "
                         "AND memory_type IN ('episodic','semantic','perceptual')")[0][0]
    points = sum(mm.bundle.vectors.count(c) for c in memory_collections(mm.bundle.vectors))
    fts = rows(rec, "SELECT COUNT(*) FROM memories_fts")[0][0]
    live_all = rows(rec, "SELECT COUNT(*) FROM memories WHERE deleted_at IS NULL")[0][0]
    assert (points, fts) == (live_vec, live_all)
    assert live_all == sum(len(m.live) for m in models.values())


LONG = pytest.param(1500, 120.0, marks=[pytest.mark.slow, pytest.mark.timeout(900)], id="long")


@pytest.mark.parametrize(("max_ops", "seconds"), [pytest.param(OPS_PER_THREAD, DEADLINE_S, id="default"), LONG])
def test_eight_threads_mixed_operations(tmp_path: Path, max_ops: int, seconds: float) -> None:
    home, emb = tmp_path / "data", DeterministicFakeEmbedder(dimension=32)
    managers = [MemoryManager(_settings(home), user_id=f"user{i}", enable_perceptual=True, embedder=emb)
                for i in range(THREADS)]  # one façade per thread, sharing one StoreBundle
    assert len({id(m.bundle) for m in managers}) == 1
    models = {m.user_id: Model() for m in managers}
    errors: list[str] = []
    stop = time.monotonic() + seconds
    threads = [
        threading.Thread(target=_worker, args=(m, models[m.user_id], random.Random(SEED + i), stop, errors, max_ops))
        for i, m in enumerate(managers)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        assert errors == []
        total = sum(m.ops for m in models.values())
        print(f"concurrency: {THREADS} threads ran {total} operations")
        assert total >= THREADS * 20, "too few operations ran"
        _check_end_state(home, managers[0], models)
    finally:
        for m in managers:
            m.close()
    with MemoryManager(_settings(home), user_id="user0", enable_perceptual=True, embedder=emb) as mm:
        _check_end_state(home, mm, models)  # and the same after a clean reopen


def _rag_worker(p: RAGPipeline, rng: random.Random, docs: dict[str, int], errors: list[str]) -> None:
    try:
        for n in range(25):
            r = rng.random()
            if r < 0.5 or not docs:
                doc = f"{p.namespace}-d{n}"
                body = " ".join(rng.choice(["alpha", "beta", "gamma", "向量", "检索"]) for _ in range(120))
                docs[doc] = p.add_text(f"# {doc}\n\n{body}", document_id=doc).chunks
            elif r < 0.8:
                hits = p.search("alpha 向量", limit=5).hits
                assert {h.document_id for h in hits} <= set(docs) | {None}
            else:
                doc = rng.choice(sorted(docs))
                p.delete_document(doc)
                del docs[doc]
    except Exception as e:
        errors.append(f"{p.namespace}: {type(e).__name__}: {e}")


def test_rag_namespaces_and_memories_in_parallel(tmp_path: Path) -> None:
    home, emb = tmp_path / "data", DeterministicFakeEmbedder(dimension=32)
    pipes = [RAGPipeline(_settings(home), namespace=f"ns{i}", embedder=emb, llm=None) for i in range(4)]
    mms = [MemoryManager(_settings(home), user_id=f"m{i}", enable_perceptual=True, embedder=emb)
           for i in range(2)]
    docs: dict[str, dict[str, int]] = {p.namespace: {} for p in pipes}
    models = {m.user_id: Model() for m in mms}
    errors: list[str] = []
    stop = time.monotonic() + DEADLINE_S
    threads = [threading.Thread(target=_rag_worker, args=(p, random.Random(i), docs[p.namespace], errors))
               for i, p in enumerate(pipes)]
    threads += [threading.Thread(target=_worker, args=(m, models[m.user_id], random.Random(50 + i), stop,
                                                       errors)) for i, m in enumerate(mms)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        assert errors == []
        for p in pipes:
            assert {d.document_id: d.chunks for d in p.list_documents()} == docs[p.namespace]
        assert rag_problems(home, pipes[0].bundle.vectors) == []
        _check_end_state(home, mms[0], models)
    finally:
        for x in [*pipes, *mms]:
            x.close()


_HOLDER = """
import sys
from hello_memory import MemoryManager, Settings
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
mm = MemoryManager(Settings(home=sys.argv[1]), user_id="holder", embedder=DeterministicFakeEmbedder(8))
print("ready", flush=True)
sys.stdin.readline()
"""

_OPENER = """
import sys
from hello_memory import MemoryManager, Settings
from hello_memory.errors import StoreLockedError
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
try:
    MemoryManager(Settings(home=sys.argv[1]), user_id="second", embedder=DeterministicFakeEmbedder(8))
except StoreLockedError as e:
    print("StoreLockedError:", e)
    sys.exit(3)
"""


def _python(code: str, *args: str, **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)  # type: ignore[call-overload]


def test_second_process_gets_store_locked_error(tmp_path: Path) -> None:
    home = tmp_path / "data"
    with MemoryManager(Settings(home=home), user_id="first", embedder=DeterministicFakeEmbedder(8)):
        out, err = _python(_OPENER, str(home)).communicate(timeout=120)
    assert "StoreLockedError:" in out and "in use by another process" in out, (out, err)
    assert "Traceback" not in err


def test_lock_held_by_another_process_then_released_even_by_sigkill(tmp_path: Path) -> None:
    home = tmp_path / "data"
    holder = _python(_HOLDER, str(home), stdin=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        emb = DeterministicFakeEmbedder(8)
        with pytest.raises(StoreLockedError, match="in use by another process"):
            MemoryManager(Settings(home=home), user_id="me", embedder=emb)
        with pytest.raises(StoreLockedError, match="in use by another process"):
            RAGPipeline(Settings(home=home), namespace="kb", embedder=emb, llm=None)
    finally:
        holder.kill()  # SIGKILL: the kernel drops the flock with the process
        holder.wait(60)
    with MemoryManager(Settings(home=home), user_id="me", embedder=emb) as mm:
        mm.add("the directory is usable again", memory_type="episodic")
        assert mm.search("the directory is usable again")[0].item.content == "the directory is usable again"
