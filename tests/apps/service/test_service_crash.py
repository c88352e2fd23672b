"""SIGKILL the service during writes, restart it: every acknowledged write is there, nothing half-written.
And SIGTERM during a write: the write completes, the service closes its stores and exits 0."""

from __future__ import annotations

import json
import random
import sys
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field

from service_runner import REPO, start_service

from hello_memory import MemoryManager, Settings
from hello_memory.client.discovery import SERVICE_FILE
from hello_memory.client.remote import RemoteMemory
from hello_memory.errors import HelloMemoryError
from rag import RAGPipeline
from rag.remote import RemoteRAG

sys.path.insert(0, str(REPO / "tests" / "reliability"))
from rel_scan import memory_problems, rag_problems

TRIALS = 4
USER = "crash-user"


@dataclass
class Ledger:
    """Writes whose call returned (acknowledged), and the one in flight when the service died."""

    memories: dict[str, str] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)
    documents: dict[str, str] = field(default_factory=dict)
    in_flight: dict[str, str] = field(default_factory=dict)  # id → what the call running now may set
    uncertain: dict[str, str] = field(default_factory=dict)  # ids an unacknowledged call may have changed
    adding: list[str] = field(default_factory=list)  # contents the add running now may store
    adding_types: list[str] = field(default_factory=list)  # and their memory types
    maybe_added: set[str] = field(default_factory=set)  # contents unacknowledged adds may have stored
    to_retry: list[tuple[list[dict], list[str]]] = field(default_factory=list)  # cut-off adds and their ids
    retried: int = 0
    acked: int = 0


def _writes(url: str, ledger: Ledger, rng: random.Random, stop: threading.Event) -> None:
    with RemoteMemory(url, user_id=USER, timeout=10) as mm, RemoteRAG(url, namespace="crash", timeout=10) as kb:
        n = 0
        while not stop.is_set():
            n += 1
            op = rng.choice(["add", "add", "add_many", "update", "remove", "document"])
            live = sorted(set(ledger.memories) - ledger.removed - set(ledger.uncertain))
            try:
                if op == "add" or (op in ("update", "remove") and not live):
                    ledger.adding = [f"memory {n} {rng.random()}"]
                    ledger.adding_types = [rng.choice(["episodic", "semantic"])]
                    item = mm.add(ledger.adding[0], memory_type=ledger.adding_types[0])
                    ledger.memories[item.id] = item.content
                elif op == "add_many":
                    token = rng.randrange(10**9)
                    batch = [{"content": f"batch {n}.{k} {token}", "memory_type": "episodic"} for k in range(4)]
                    ledger.adding = [b["content"] for b in batch]
                    ledger.adding_types = [b["memory_type"] for b in batch]
                    for item in mm.add_many(batch):
                        ledger.memories[item.id] = item.content
                elif op == "update":
                    target, text = rng.choice(live), f"updated {n} {rng.randrange(10**9)}"
                    ledger.in_flight = {target: text}
                    ledger.memories[target] = mm.update(target, content=text).content
                elif op == "remove":
                    target = rng.choice(live)
                    ledger.in_flight = {target: "<removed>"}
                    mm.remove(target)
                    ledger.removed.add(target)
                else:
                    text = f"# Doc {n}\n\nA document about crash number {n} and its {rng.random()} details."
                    report = kb.add_text(text, document_id=f"doc-{n}-{rng.randrange(10**6)}")
                    ledger.documents[report.document_id] = text
                ledger.in_flight, ledger.adding = {}, []
                ledger.acked += 1
            except HelloMemoryError as e:
                ledger.uncertain.update(ledger.in_flight)  # it may or may not have happened, forever
                ids = getattr(e, "memory_ids", None)
                if ledger.adding and isinstance(ids, list) and len(ids) == len(ledger.adding):
                    pairs = zip(ledger.adding, ledger.adding_types, strict=True)
                    specs = [{"content": c, "memory_type": t} for c, t in pairs]
                    ledger.to_retry.append((specs, ids))  # retried after the restart: stored once
                else:
                    ledger.maybe_added.update(ledger.adding)
                ledger.in_flight, ledger.adding = {}, []
                return  # the service is gone: this call was not acknowledged


def _retry_cut_off_adds(url: str, ledger: Ledger) -> None:
    """Repeat every add the kill cut off, with the ids its error named: each is stored exactly once,
    whether or not the first try had committed."""
    with RemoteMemory(url, user_id=USER, timeout=30) as mm:
        for specs, ids in ledger.to_retry:
            items = mm.add_many([{**spec, "memory_id": i} for spec, i in zip(specs, ids, strict=True)])
            assert [i.id for i in items] == ids and [i.content for i in items] == [s["content"] for s in specs]
            ledger.memories.update({i.id: i.content for i in items})
            ledger.retried += len(items)
    ledger.to_retry = []


def _check(mm: RemoteMemory, kb: RemoteRAG, ledger: Ledger) -> None:
    everything = mm.get_all()
    stored = {i.id: i.content for i in everything}
    twice = [c for c, k in Counter(i.content for i in everything).items() if k > 1]
    assert not twice, f"stored twice: {twice}"  # every content written is unique
    for memory_id, content in ledger.memories.items():
        if memory_id in ledger.removed:
            assert memory_id not in stored, f"removed {memory_id} came back"
        elif memory_id in ledger.uncertain:  # an update or remove that was cut off
            assert stored.get(memory_id, "<removed>") in (content, ledger.uncertain[memory_id])
        else:
            assert stored.get(memory_id) == content, f"acknowledged {memory_id} lost or changed"
    unknown = {stored[i] for i in set(stored) - set(ledger.memories)}
    assert unknown <= ledger.maybe_added, f"memories nobody wrote: {unknown - ledger.maybe_added}"
    docs = {d.document_id for d in kb.list_documents()}
    assert set(ledger.documents) <= docs
    for memory_id in list(ledger.memories)[-3:]:
        if memory_id in stored:
            assert memory_id in {h.item.id for h in mm.search(stored[memory_id], limit=10)}


def test_sigkill_during_writes_loses_no_acknowledged_write(tmp_path):
    home, rng, ledger = tmp_path / "data", random.Random(20261201), Ledger()
    for _ in range(TRIALS):
        running = start_service(home)
        _retry_cut_off_adds(running.url, ledger)
        stop = threading.Event()
        writer = threading.Thread(target=_writes, args=(running.url, ledger, rng, stop))
        acked, deadline = ledger.acked, time.monotonic() + 60
        writer.start()
        while ledger.acked == acked and writer.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)  # a first write (creating the collections) can take a second
        time.sleep(rng.uniform(0.0, 0.8))
        running.kill()  # SIGKILL: no shutdown, no flush, no SERVICE file removal
        stop.set()
        writer.join(timeout=60)
        assert (home / SERVICE_FILE).exists()  # stale: the next start must replace it, clients ignore it
    running = start_service(home)
    try:
        _retry_cut_off_adds(running.url, ledger)
        with RemoteMemory(running.url, user_id=USER) as mm, RemoteRAG(running.url, namespace="crash") as kb:
            _check(mm, kb, ledger)
    finally:
        assert running.stop() == 0, running.output()
    assert ledger.acked > 2 * TRIALS
    print(f"{TRIALS} SIGKILLs: {ledger.acked} acknowledged writes, {len(ledger.memories)} memories "
          f"({len(ledger.removed)} removed, {ledger.retried} from cut-off adds retried), "
          f"{len(ledger.documents)} documents verified")
    with MemoryManager(Settings(home=home, embedder="tfidf")) as mm, \
            RAGPipeline(Settings(home=home, embedder="tfidf"), namespace="crash") as kb:
        assert memory_problems(mm.bundle.home, mm.bundle.vectors) == []
        assert rag_problems(kb.bundle.home, kb.bundle.vectors) == []


def _running(url: str) -> int:
    with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
        return int(json.loads(response.read())["running"])


def test_sigterm_finishes_the_write_in_flight_then_closes_the_stores(tmp_path):
    home = tmp_path / "data"
    running = start_service(home)
    specs = [{"content": f"graceful memory {k} with some words to embed", "memory_type": "episodic"}
             for k in range(1500)]
    result: dict[str, object] = {}

    def write() -> None:
        with RemoteMemory(running.url) as mm:
            try:
                result["items"] = mm.add_many(specs)
            except HelloMemoryError as e:
                result["error"] = e

    writer = threading.Thread(target=write)
    writer.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and writer.is_alive() and _running(running.url) == 0:
        time.sleep(0.01)
    assert writer.is_alive(), "the write finished before SIGTERM: make it bigger"
    assert running.stop() == 0, running.output()  # SIGTERM, then wait for the exit
    writer.join(timeout=60)
    assert "error" not in result and len(result["items"]) == len(specs)  # type: ignore[arg-type]
    assert not (home / SERVICE_FILE).exists()
    with MemoryManager(Settings(home=home, embedder="tfidf")) as mm:  # the lock was released
        assert len(mm.get_all()) == len(specs)
        assert memory_problems(mm.bundle.home, mm.bundle.vectors) == []


def test_a_request_over_its_timeout_is_504_and_the_write_still_completes(tmp_path):
    from hello_memory.errors import ServiceTimeoutError

    running = start_service(tmp_path / "data", env={"HELLO_MEMORY_SERVICE_REQUEST_TIMEOUT": "0.05"})
    specs = [{"content": f"slow batch {k} with words", "memory_type": "episodic"} for k in range(600)]
    try:
        # retries=0: the client's own retry of a 504 (idempotent by memory_id) would return the batch
        # once the first write had finished, on a quiet machine (test_service_retries covers that)
        with RemoteMemory(running.url, retries=0) as mm:
            try:
                mm.add_many(specs)
                timed_out = False
            except ServiceTimeoutError as e:
                timed_out = True
                assert e.status == 504 and "continues on the service" in str(e)
            assert timed_out, "600 adds finished within 50 ms: the timeout was not exercised"
    finally:
        assert running.stop() == 0, running.output()  # shutdown waits for the abandoned write
    with MemoryManager(Settings(home=tmp_path / "data", embedder="tfidf")) as mm:
        assert len(mm.get_all()) == len(specs)
        assert memory_problems(mm.bundle.home, mm.bundle.vectors) == []
