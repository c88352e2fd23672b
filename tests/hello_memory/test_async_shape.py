"""The async classes have the sync classes' methods, arguments, defaults and overloads, each awaitable.

``close``/``with`` become ``aclose``/``async with``; the async classes add ``open`` (what the first
call would otherwise do) and, for the in-process ones, ``wrap`` (a view of an open façade) and a
blocking ``close``. Nothing else differs.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hello_memory import AsyncMemoryManager, AsyncRemoteMemory, MemoryManager, RemoteMemory, Settings
from hello_memory.api import MemoryAdminAPI, MemoryAPI
from hello_memory.api_async import SYNC_NAMES, AsyncMemoryAdminAPI, AsyncMemoryAPI
from hello_memory.errors import InvalidInputError
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from rag import AsyncRAGPipeline, RAGPipeline

PAIRS = [(MemoryManager, AsyncMemoryManager), (RemoteMemory, AsyncRemoteMemory), (RAGPipeline, AsyncRAGPipeline),
         (MemoryAPI, AsyncMemoryAPI), (MemoryAdminAPI, AsyncMemoryAdminAPI)]
EXTRA = {AsyncMemoryManager: {"open", "wrap"}, AsyncRemoteMemory: {"open"}, AsyncRAGPipeline: {"open", "wrap"}}
"""What the async classes add: ``open`` (what the first call would do), ``wrap`` (a view of an open façade)."""


def _methods(cls: type) -> dict[str, object]:
    """Public methods (and ``with`` support), inherited ones included; properties are attributes."""
    found = {}
    for klass in reversed(cls.__mro__[:-1]):
        for name, value in vars(klass).items():
            value = value.__func__ if isinstance(value, classmethod) else value
            if inspect.isfunction(value) and (not name.startswith("_") or name in (*SYNC_NAMES, *SYNC_NAMES.values())):
                found[name] = value
    return found


def _params(fn: object) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]  # type: ignore[arg-type]


@pytest.mark.parametrize(("sync", "aio"), PAIRS, ids=lambda c: c.__name__)
def test_the_async_class_has_the_sync_classes_methods_and_no_others(sync: type, aio: type) -> None:
    methods = _methods(aio)
    assert {SYNC_NAMES.get(name, name) for name in methods} == set(_methods(sync)) | EXTRA.get(aio, set())
    assert all(name in methods for name in SYNC_NAMES if SYNC_NAMES[name] in _methods(sync))  # aclose, async with


@pytest.mark.parametrize(("sync", "aio"), PAIRS, ids=lambda c: c.__name__)
def test_every_call_is_awaitable_with_the_same_arguments_and_defaults(sync: type, aio: type) -> None:
    aio_methods = _methods(aio)
    for name, method in _methods(sync).items():
        if name in ("close", "__enter__", "__exit__"):
            continue
        twin = aio_methods[name]
        assert _params(twin) == _params(method), f"{aio.__name__}.{name}"
        if name == "export_lines":  # an async iterator, not a coroutine
            hint = typing.get_type_hints(twin)["return"]
            assert typing.get_origin(hint) is AsyncIterator and not inspect.iscoroutinefunction(twin)
        else:
            assert inspect.iscoroutinefunction(twin), f"{aio.__name__}.{name} is not async"


@pytest.mark.parametrize("aio", [AsyncMemoryAPI, AsyncMemoryManager, AsyncRemoteMemory])
def test_add_has_the_sync_overloads(aio: type) -> None:
    # add(str) -> MemoryItem and add(messages) -> list[MemoryItem], awaited.
    want = [str(inspect.signature(f, eval_str=True)) for f in typing.get_overloads(MemoryAPI.add)]
    assert [str(inspect.signature(f, eval_str=True)) for f in typing.get_overloads(aio.add)] == want
    sync_hints = [typing.get_type_hints(f)["return"] for f in typing.get_overloads(MemoryAPI.add)]
    assert [typing.get_type_hints(f)["return"] for f in typing.get_overloads(aio.add)] == sync_hints


@pytest.mark.parametrize("name", ["get", "search", "forget", "build_context", "stats", "import_lines"])
def test_results_have_the_sync_types(name: str) -> None:
    want = typing.get_type_hints(getattr(RemoteMemory, name))["return"]
    for aio in (AsyncMemoryAPI, AsyncMemoryAdminAPI, AsyncMemoryManager, AsyncRemoteMemory):
        if hasattr(aio, name):
            assert typing.get_type_hints(getattr(aio, name))["return"] == want, f"{aio.__name__}.{name}"


def test_the_async_classes_are_the_async_protocols_and_construct_without_io(tmp_path: Path) -> None:
    # Nothing is opened or sent by the constructors: no data directory, no request to port 9.
    mm = AsyncMemoryManager(Settings(home=tmp_path / "data", embedder="tfidf"), user_id="alice")
    remote = AsyncRemoteMemory("http://127.0.0.1:9", user_id="bob")
    kb = AsyncRAGPipeline(Settings(home=tmp_path / "data"), namespace="docs", embedder=DeterministicFakeEmbedder())
    assert not (tmp_path / "data").exists()
    assert isinstance(mm, AsyncMemoryAPI) and isinstance(mm, AsyncMemoryAdminAPI)
    assert not isinstance(mm, MemoryAPI)
    assert (mm.user_id, remote.user_id, kb.namespace) == ("alice", "bob", "docs")
    assert set(mm.enabled) == {"working", "episodic", "semantic"}
    # The service's tiers are known once it was asked (``await remote.open()``); before, reading them
    # says so — and Python before 3.12 reads them in isinstance() of a protocol with properties.
    with pytest.raises(InvalidInputError, match="open"):
        remote.enabled  # noqa: B018
    assert all(callable(getattr(remote, name)) for name in ("add", "search", "export_lines", "aclose"))
