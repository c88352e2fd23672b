"""Workload of the crash-durability test, run in a child process that the test kills with SIGKILL.

The child writes one line to its log after each operation *returned* (line-buffered, flushed by
``print``), so a line proves that the call completed; lines ending in ``-begin`` mark calls that
may have been interrupted. Imported by the multiprocessing fork server (which preloads it, so a
child starts in milliseconds instead of re-importing numpy, Qdrant Edge and jieba).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from hello_memory import MemoryManager, Settings
from hello_memory.language.text import lexical_tokens
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from rag import RAGPipeline

USER, OTHER = "crash-user", "crash-other"
TYPES = ("working", "episodic", "semantic", "perceptual")
_PEOPLE = ("Alice", "Bob", "Carol", "Dmitri", "Eve")
_PLACES = ("Paris", "Berlin", "Tokyo", "Lima", "Oslo")
_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "sigma", "omega",
          "记忆", "检索", "向量", "数据库"]

lexical_tokens("预热 warm up")  # load jieba's dictionary once, in the fork server


def settings(home: Path) -> Settings:
    """Settings of the crash workload (no working-memory eviction, small RAG chunks)."""
    return Settings(home=home, working_capacity=100_000, working_token_budget=10_000_000,
                    chunk_tokens=40, overlap_tokens=5, llm_base_url=None, llm_api_key=None)


def embedder() -> DeterministicFakeEmbedder:
    """The embedder the child and the verifier share."""
    return DeterministicFakeEmbedder(dimension=32)


def content(rng: random.Random, tag: str, memory_type: str) -> str:
    """A unique memory text; semantic ones name people and places so that the graph is written."""
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 12)))
    if memory_type == "semantic":
        return f"{rng.choice(_PEOPLE)} lives in {rng.choice(_PLACES)}. {tag} {words}"
    return f"{tag} {words}"


def document(rng: random.Random, tag: str) -> str:
    """A Markdown document of a few sections (several chunks at 40 tokens)."""
    parts = [f"# Document {tag}"]
    for s in range(rng.randint(1, 4)):
        parts.append(f"## Section {s} {tag}")
        parts.append(" ".join(rng.choice(_WORDS) for _ in range(rng.randint(10, 80))) + ".")
    return "\n\n".join(parts)


def run(home: str, seed: int, log_path: str) -> None:
    """Open the stores and loop over random operations until killed."""
    rng = random.Random(seed)
    log = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives until SIGKILL
    sys.stdout = log
    s, emb = settings(Path(home)), embedder()
    mm = MemoryManager(s, user_id=USER, enable_perceptual=True, embedder=emb)
    rag = RAGPipeline(s, namespace="kb", embedder=emb, llm=None)
    print("open", flush=True)
    state: dict[str, list[str]] = {"mine": [], "docs": []}
    n = 0
    while True:
        n += 1
        _step(rng, mm, rag, state, f"s{seed}n{n}")


def _step(rng: random.Random, mm: MemoryManager, rag: RAGPipeline, state: dict[str, list[str]], tag: str
          ) -> None:
    r = rng.random()
    if r < 0.40 or not state["mine"]:
        t = rng.choice(TYPES)
        imp = round(rng.random(), 3)
        extra = {"source_path": f"/photos/{tag}.jpg"} if t == "perceptual" else {}
        item = mm.add(content(rng, tag, t), memory_type=t, importance=imp, **extra)
        state["mine"].append(item.id)
        print("add", item.id, t, imp, flush=True)
    elif r < 0.48:
        specs = [{"content": content(rng, f"{tag}b{i}", "episodic"), "memory_type": "episodic",
                  "importance": 0.5} for i in range(3)]
        items = mm.add_many(specs)
        state["mine"] += [it.id for it in items]
        for it in items:
            print("add", it.id, "episodic", 0.5, flush=True)
    elif r < 0.56:
        mid = rng.choice(state["mine"])
        t = mm.get(mid).memory_type.value
        mm.update(mid, content=content(rng, tag, t), importance=round(rng.random(), 3))
        print("upd", mid, flush=True)
    elif r < 0.63:
        mid = state["mine"].pop(rng.randrange(len(state["mine"])))
        print("rm-begin", mid, flush=True)
        mm.remove(mid)
        print("rm", mid, flush=True)
    elif r < 0.67:
        item = mm.add(content(rng, tag, "episodic"), memory_type="episodic", user_id=OTHER)
        print("addo", item.id, flush=True)
    elif r < 0.69:
        print("fu-begin", flush=True)
        mm.forget_user(OTHER)
        print("fu", flush=True)
    elif r < 0.83 or not state["docs"]:
        doc = f"doc-{tag}"
        rep = rag.add_text(document(rng, tag), document_id=doc)
        state["docs"].append(doc)
        print("doc", doc, rep.chunks, flush=True)
    elif r < 0.92:
        doc = rng.choice(state["docs"])
        print("doc-begin", doc, flush=True)
        rep = rag.add_text(document(rng, tag), document_id=doc)
        print("doc", doc, rep.chunks, flush=True)
    else:
        doc = state["docs"].pop(rng.randrange(len(state["docs"])))
        print("deldoc-begin", doc, flush=True)
        rag.delete_document(doc)
        print("deldoc", doc, flush=True)


def add_batch_killed(home: str, specs_json: str, point: str) -> None:
    """``add_many`` the batch in ``specs_json`` and SIGKILL this process at ``point``.

    ``"after-commit"``: the batch's SQLite transaction committed, its vectors are written, the call
    has not returned (its pending markers are not settled yet). ``"before-commit"``: killed while its
    vectors are being written, before the transaction commits.
    """
    import json
    import os
    import signal

    def die(*_args: object, **_kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    mm = MemoryManager(settings(Path(home)), user_id=USER, embedder=embedder())
    if point == "after-commit":
        mm.bundle.records.settle = die  # type: ignore[method-assign]
    else:
        mm.bundle.dense.write = die  # type: ignore[method-assign]
    mm.add_many(json.loads(Path(specs_json).read_text(encoding="utf-8")))
    raise SystemExit("not killed")  # the test asserts the exit was SIGKILL
