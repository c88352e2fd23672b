"""Four processes drive one real service at once; the final state is exactly what was acknowledged.

Each process owns a user (adds in three tiers, add_many, updates, removes, searches, gets) and also
adds to one user they all share. A write counts only once its call returned. At the end every
user's memories equal that process's model, the shared user holds the union of the acknowledged
adds, and, with the service stopped, the raw stores are consistent (no half-written memory).
"""

from __future__ import annotations

import json
import multiprocessing
import random
import sys
from pathlib import Path

from service_runner import REPO, start_service

from hello_memory import MemoryManager, Settings
from hello_memory.client.remote import RemoteMemory

sys.path.insert(0, str(REPO / "tests" / "reliability"))
from rel_scan import memory_problems

PROCESSES = 4
OPERATIONS = 60
SHARED = "shared-user"
TIERS = ("working", "episodic", "semantic")


def _worker(url: str, user: str, seed: int, out: str) -> None:
    rng = random.Random(seed)
    model: dict[str, str] = {}
    shared: list[str] = []
    with RemoteMemory(url, user_id=user) as mm:
        for n in range(OPERATIONS):
            op = rng.choice(["add", "add", "add_many", "update", "remove", "search", "get", "shared"])
            if op == "add" or (not model and op in ("update", "remove", "get")):
                item = mm.add(f"{user} note {n} about topic{rng.randrange(5)}", memory_type=rng.choice(TIERS[1:]))
                model[item.id] = item.content
            elif op == "add_many":
                items = mm.add_many([{"content": f"{user} batch {n}.{k}", "memory_type": "episodic"} for k in range(3)])
                model.update({i.id: i.content for i in items})
            elif op == "update":
                target = rng.choice(sorted(model))
                model[target] = mm.update(target, content=f"{user} updated {n}").content
            elif op == "remove":
                target = rng.choice(sorted(model))
                mm.remove(target)
                del model[target]
            elif op == "search":
                hits = mm.search(f"topic{rng.randrange(5)}", limit=5)
                assert all(h.item.user_id == user for h in hits)
                assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
            elif op == "get":
                target = rng.choice(sorted(model))
                assert mm.get(target).content == model[target]
            else:
                shared.append(mm.add(f"{user} shares {n}", memory_type="episodic", user_id=SHARED).id)
    Path(out).write_text(json.dumps({"model": model, "shared": shared}), encoding="utf-8")


def test_four_processes_final_state_equals_the_acknowledged_writes(tmp_path):
    running = start_service(tmp_path / "data")
    try:
        ctx = multiprocessing.get_context("fork")
        outs = [tmp_path / f"worker{k}.json" for k in range(PROCESSES)]
        procs = [ctx.Process(target=_worker, args=(running.url, f"worker-{k}", 100 + k, str(outs[k])))
                 for k in range(PROCESSES)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=600)
        assert [p.exitcode for p in procs] == [0] * PROCESSES, running.output()
        results = [json.loads(o.read_text(encoding="utf-8")) for o in outs]
        with RemoteMemory(running.url) as mm:
            for k, result in enumerate(results):
                stored = {i.id: i.content for i in mm.get_all(user_id=f"worker-{k}", include_deleted=True)}
                assert stored == result["model"], f"worker-{k}"
                assert mm.stats(user_id=f"worker-{k}").total == len(result["model"])
            shared = {i.id for i in mm.get_all(user_id=SHARED)}
            assert shared == {i for r in results for i in r["shared"]}
            assert sum(len(r["model"]) for r in results) > PROCESSES * OPERATIONS // 2
    finally:
        assert running.stop() == 0, running.output()
    with MemoryManager(Settings(home=tmp_path / "data", embedder="tfidf")) as mm:
        assert memory_problems(mm.bundle.home, mm.bundle.vectors) == []
