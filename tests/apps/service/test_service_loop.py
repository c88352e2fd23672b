"""The service's event loop never waits for the core: every blocking call of a request runs in a worker thread.

The service runs in process (uvicorn in a thread). Two proofs, neither timed:

- every route is called (through the clients) with the core's blocking parts watched — the
  memory, the knowledge bases, the embedder, the service's file checks, the import spool, the
  health check's data-directory id, the stores' close at shutdown: a call made in the thread of a
  running event loop is recorded, and none may be;
- while an add waits at an embedder gate, the same service answers ``/health``, other users'
  adds, searches and reads, and the waiting add ends only when the test opens the gate.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from service_inprocess import serving

from apps.service import spool as spool_module
from apps.service.app import create_app
from apps.service.core import ServiceCore
from apps.service.settings import ServiceSettings
from hello_memory import AsyncRemoteMemory, Settings
from hello_memory.testing.blocking import BlockingMemory
from hello_memory.testing.fake_embedder import GatedEmbedder
from rag.remote import RemoteRAG

WATCHED = {"core.rag", "core.resolve_root_path", "embedder.embed", "spool.feed", "spool.finish",
           *(f"memory.{name}" for name in ("add", "add_many", "build_context", "clear_all", "consolidate",
                                            "export_lines", "forget", "forget_user", "get", "get_all", "history",
                                            "import_lines", "reindex_graph", "remove", "restore", "search", "stats",
                                            "summary", "update"))}


def _on_loop() -> bool:
    """True in a thread that runs an event loop (never true in a worker thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@dataclass
class Watch:
    """Calls made on an event loop's thread, by name."""

    on_loop: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def wrap(self, fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(fn)
        def watched(*args: Any, **kwargs: Any) -> Any:
            self.seen.add(name)
            if _on_loop():
                self.on_loop.append(name)
            return fn(*args, **kwargs)

        return watched


class Watched:
    """An object whose method calls go through :meth:`Watch.wrap`; attributes pass as they are."""

    def __init__(self, target: Any, name: str, watch: Watch) -> None:
        self._target, self._name, self._watch = target, name, watch

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._target, attr)
        return self._watch.wrap(value, f"{self._name}.{attr}") if callable(value) else value


@dataclass
class Served:
    url: str
    core: ServiceCore
    embedder: GatedEmbedder
    watch: Watch
    routes: set[str]
    root: Path
    app: Any


def _record_routes(app: Any, hit: set[str]) -> Any:
    """An ASGI wrapper noting the path template of every route that handled a request."""

    async def recorder(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await app(scope, receive, send)
        route = scope.get("route")
        if route is not None:
            hit.add(f"{sorted(route.methods)[0]} {route.path}")

    return recorder


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    root = tmp_path / "files"
    root.mkdir()
    embedder, watch, hit = GatedEmbedder(), Watch(), set[str]()
    embedder.embed = watch.wrap(embedder.embed, "embedder.embed")  # type: ignore[method-assign]
    service = ServiceSettings(allowed_roots=[root], request_timeout=60, drain_timeout=5)
    core = ServiceCore(Settings(home=tmp_path / "data"), service, embedder=embedder)
    core.memory = Watched(core.memory, "memory", watch)  # type: ignore[assignment]
    for name in ("rag", "resolve_root_path", "close"):
        monkeypatch.setattr(core, name, watch.wrap(getattr(core, name), f"core.{name}"))
    for name in ("feed", "finish"):
        method = getattr(spool_module.ImportSpool, name)
        monkeypatch.setattr(spool_module.ImportSpool, name, watch.wrap(method, f"spool.{name}"))
    app = create_app(core)
    with serving(_record_routes(app, hit)) as url:
        try:
            yield Served(url, core, embedder, watch, hit, root, app)
        finally:
            embedder.gate.set()  # before the server stops: it waits for running operations
    assert watch.on_loop == [], f"blocking calls on the event loop: {watch.on_loop}"
    assert {"core.close", "memory.close"} <= watch.seen  # the lifespan closed the stores, in a worker thread


def _every_memory_route(mm: BlockingMemory) -> None:
    note = mm.add("tea at noon", memory_type="episodic", importance=0.05)
    mm.add([{"role": "user", "content": "hello"}], session_id="s1")
    mm.add("a photo", memory_type="perceptual", modality="image", source_path="photo.jpg")
    mm.add_many([{"content": "learning Rust", "memory_type": "working", "importance": 0.9}])
    mm.search("tea"), mm.get_all(), mm.get(note.id), mm.history(note.id), mm.stats(), mm.summary()
    mm.build_context("tea"), mm.update(note.id, importance=0.06), mm.identity(), mm.all_stats()
    mm.forget(threshold=0.1), mm.restore(note.id), mm.consolidate("working", "episodic", 0.7)
    lines = list(mm.export_lines())
    mm.import_lines(lines), mm.reindex_graph(), mm.remove(note.id), mm.clear_all()
    mm.add("bye", user_id="someone"), mm.forget_user("someone")


def _every_document_route(url: str, root: Path) -> None:
    (root / "guide.md").write_text("# Reset\nOpen Settings and choose Reset password.\n", encoding="utf-8")
    with RemoteRAG(url, namespace="docs") as kb:
        kb.add_document(root / "guide.md"), kb.add_server_document("guide.md", document_id="served")
        kb.add_text("# Tea\nGreen tea at noon.", document_id="tea"), kb.list_documents(), kb.stats()
        kb.search("reset password"), kb.ask("How do I reset my password?"), kb.delete_document("tea"), kb.clear()


def test_no_route_calls_the_core_on_the_event_loop(served: Served) -> None:
    (served.root / "photo.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    served.embedder.gate.set()  # nothing waits here
    with BlockingMemory(AsyncRemoteMemory(served.url, user_id="alice")) as mm:
        _every_memory_route(mm)
    _every_document_route(served.url, served.root)
    with httpx.Client(base_url=served.url) as client:
        assert client.get("/health").status_code == client.get("/ready").status_code == 200
    assert served.watch.on_loop == []
    assert served.watch.seen >= WATCHED  # and they were called: the watch saw them, in worker threads
    api = {f"{sorted(r.methods)[0]} {r.path}" for r in served.app.routes
           if getattr(r, "methods", None) and r.path.startswith(("/v1", "/health", "/ready"))}
    assert api - served.routes == set()  # every route was called


def test_requests_complete_while_a_slow_operation_is_in_flight(served: Served) -> None:
    async def scenario() -> list[str]:
        done: list[str] = []
        async with AsyncRemoteMemory(served.url, user_id="alice") as alice, \
                AsyncRemoteMemory(served.url, user_id="bob") as bob, \
                httpx.AsyncClient(base_url=served.url) as http:
            slow = asyncio.create_task(alice.add("a SLOW memory", memory_type="episodic"))
            assert await asyncio.to_thread(served.embedder.reached), "the slow add never reached the embedder"
            done.append(f"health {(await http.get('/health')).json()['running']}")
            done.append(f"add {(await bob.add('tea at noon', memory_type='episodic')).content}")
            hits = await bob.search("tea at noon")
            done.append(f"search {hits[0].item.content}")
            done.append(f"alice sees {len(await alice.get_all())}")  # the slow add is not stored yet
            done.append(f"slow done: {slow.done()}")
            served.embedder.gate.set()
            done.append(f"slow {(await slow).content}")
        return done

    assert asyncio.run(scenario()) == ["health 1", "add tea at noon", "search tea at noon", "alice sees 0",
                                       "slow done: False", "slow a SLOW memory"]
