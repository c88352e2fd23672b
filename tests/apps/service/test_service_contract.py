"""One behavioural suite, two implementations: ``MemoryManager`` in process and ``RemoteMemory``
through a real service (uvicorn on loopback, real HTTP), plus a differential run of both."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from service_runner import start_service

from hello_memory import MemoryManager, Settings
from hello_memory.api import MemoryAdminAPI, MemoryAPI
from hello_memory.client.remote import RemoteMemory
from hello_memory.testing.memory_api import MemoryAPIContract, differential_script
from rag import RAGPipeline
from rag.api import RAGAPI
from rag.remote import RemoteRAG


class TestMemoryManagerContract(MemoryAPIContract):
    @pytest.fixture
    def memory(self, tmp_path: Path, fresh_user: str) -> Iterator[MemoryAPI]:
        with MemoryManager(Settings(home=tmp_path / "data", embedder="tfidf"), user_id=fresh_user,
                           enable_perceptual=True) as mm:
            yield mm


class TestRemoteMemoryContract(MemoryAPIContract):
    @pytest.fixture
    def memory(self, service, fresh_user: str) -> Iterator[MemoryAPI]:
        with RemoteMemory(service.url, user_id=fresh_user) as mm:
            yield mm

    def test_default_user_is_the_services(self, service) -> None:
        with RemoteMemory(service.url) as mm:
            assert mm.user_id == "default_user"

    def test_a_closed_client_refuses_like_a_closed_manager(self, service) -> None:
        mm = RemoteMemory(service.url)
        mm.close()
        mm.close()
        with pytest.raises(Exception) as err:
            mm.stats()
        assert type(err.value).__name__ == "InvalidInputError" and "closed" in str(err.value)


def _params(fn: object) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]  # type: ignore[arg-type]


@pytest.mark.parametrize(("protocol", "local", "remote", "at_least"),
                         [(MemoryAPI, MemoryManager, RemoteMemory, 10), (RAGAPI, RAGPipeline, RemoteRAG, 10),
                          (MemoryAdminAPI, MemoryManager, RemoteMemory, 3)])
def test_same_methods_arguments_and_defaults(protocol, local, remote, at_least):
    names = [n for n, v in vars(protocol).items() if callable(v) and (not n.startswith("_") or n in (
        "__enter__", "__exit__"))]
    assert len(names) >= at_least
    for name in names:
        want = _params(getattr(protocol, name))
        for impl in (local, remote):
            got = _params(getattr(impl, name))
            assert got[: len(want)] == want, f"{impl.__name__}.{name}"
            extra = got[len(want):]
            assert all(kind == inspect.Parameter.KEYWORD_ONLY and default is not inspect.Parameter.empty
                       for _, kind, default in extra), f"{impl.__name__}.{name} has extra required arguments"


@pytest.mark.parametrize("impl", [MemoryManager, RemoteMemory])
def test_add_has_the_protocols_overloads(impl):
    # add(str) -> MemoryItem and add(messages) -> list[MemoryItem], exactly as MemoryAPI declares them.
    want = [str(inspect.signature(f)) for f in typing.get_overloads(MemoryAPI.add)]
    assert len(want) == 2 and [str(inspect.signature(f)) for f in typing.get_overloads(impl.add)] == want
    assert str(inspect.signature(impl.add)) == str(inspect.signature(MemoryAPI.add))


@pytest.mark.parametrize("name", ["export_lines", "import_lines", "reindex_graph"])
def test_whole_store_operations_have_exactly_the_managers_signature(name):
    want = str(inspect.signature(getattr(MemoryAdminAPI, name)))
    assert str(inspect.signature(getattr(MemoryManager, name))) == want
    assert str(inspect.signature(getattr(RemoteMemory, name))) == want
    assert isinstance(RemoteMemory("http://127.0.0.1:9"), MemoryAdminAPI)


def test_both_implementations_give_the_same_results(tmp_path, fresh_user):
    # A fresh data directory on both sides: BM25 statistics span every user of a directory.
    with MemoryManager(Settings(home=tmp_path / "local", embedder="tfidf"), user_id=fresh_user,
                       enable_perceptual=True) as local:
        expected = differential_script(local)
    running = start_service(tmp_path / "remote")
    try:
        with RemoteMemory(running.url, user_id=fresh_user) as remote:
            assert differential_script(remote) == expected
    finally:
        assert running.stop() == 0, running.output()
