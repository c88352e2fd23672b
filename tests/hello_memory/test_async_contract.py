"""The sync suites, unchanged, against the async API: ``AsyncMemoryManager`` and ``AsyncRemoteMemory``.

``MemoryManager`` and ``RemoteMemory`` pass the same suites in ``tests/apps/service/test_service_contract.py``,
``test_service_conversation.py`` and ``tests/hello_memory/test_conversation.py``; here each test
function runs through :class:`~hello_memory.testing.blocking.BlockingMemory`, which awaits every call
of the async object on its own event loop. A congruence test then runs one script on all four and
compares what they return.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from hello_memory import AsyncMemoryManager, AsyncRemoteMemory, MemoryManager, Settings
from hello_memory.api import MemoryAPI
from hello_memory.errors import InvalidInputError
from hello_memory.testing.blocking import BlockingMemory
from hello_memory.testing.conversation_api import ConversationContract
from hello_memory.testing.conversation_resend import LibraryEntry, ResendContract
from hello_memory.testing.memory_api import MemoryAPIContract, differential_script
from tests.apps.service.service_runner import RunningService, running_service


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    """A service without API keys (loopback only) on a fresh data directory, tf-idf embedder."""
    with running_service(tmp_path_factory.mktemp("async-svc") / "data") as running:
        yield running


@pytest.fixture
def fresh_user() -> str:
    return f"async-{uuid.uuid4().hex[:12]}"


def _manager(home: Path, user: str) -> AsyncMemoryManager:
    return AsyncMemoryManager(Settings(home=home, embedder="tfidf"), user_id=user, enable_perceptual=True)


@pytest.fixture
def async_manager(tmp_path: Path, fresh_user: str) -> Iterator[MemoryAPI]:
    with BlockingMemory(_manager(tmp_path / "data", fresh_user)) as mm:
        yield mm


@pytest.fixture
def async_remote(service: RunningService, fresh_user: str) -> Iterator[MemoryAPI]:
    with BlockingMemory(AsyncRemoteMemory(service.url, user_id=fresh_user)) as mm:
        yield mm


class TestAsyncMemoryManagerContract(MemoryAPIContract):
    @pytest.fixture
    def memory(self, async_manager: MemoryAPI) -> MemoryAPI:
        return async_manager


class TestAsyncRemoteMemoryContract(MemoryAPIContract):
    @pytest.fixture
    def memory(self, async_remote: MemoryAPI) -> MemoryAPI:
        return async_remote

    def test_default_user_is_the_services_once_asked(self, service: RunningService) -> None:
        mm = AsyncRemoteMemory(service.url)
        with pytest.raises(InvalidInputError, match="open"):
            mm.user_id  # noqa: B018 - nobody asked the service yet
        with BlockingMemory(mm) as opened:  # async with: GET /v1/me
            assert opened.user_id == "default_user" and "semantic" in [t.value for t in opened.enabled]

    def test_a_closed_client_refuses_like_a_closed_manager(self, service: RunningService) -> None:
        with BlockingMemory(AsyncRemoteMemory(service.url)) as mm:
            mm.runner.run(mm.memory.aclose())
            with pytest.raises(InvalidInputError, match="closed"):
                mm.stats()


class TestAsyncManagerConversations(ConversationContract):
    @pytest.fixture
    def memory(self, async_manager: MemoryAPI) -> MemoryAPI:
        return async_manager


class TestAsyncRemoteConversations(ConversationContract):
    @pytest.fixture
    def memory(self, async_remote: MemoryAPI) -> MemoryAPI:
        return async_remote


class TestAsyncManagerResend(ResendContract):
    @pytest.fixture
    def chat(self, async_manager: MemoryAPI) -> LibraryEntry:
        return LibraryEntry(async_manager)


class TestAsyncRemoteResend(ResendContract):
    @pytest.fixture
    def chat(self, async_remote: MemoryAPI) -> LibraryEntry:
        return LibraryEntry(async_remote)


def test_the_four_implementations_give_the_same_results(tmp_path: Path, fresh_user: str) -> None:
    # Fresh stores on every side: BM25 statistics span every user of a store.
    with MemoryManager(Settings(home=tmp_path / "sync", embedder="tfidf"), user_id=fresh_user,
                       enable_perceptual=True) as mm:
        expected = differential_script(mm)
    with BlockingMemory(_manager(tmp_path / "async", fresh_user)) as async_mm:
        assert differential_script(async_mm) == expected
    with running_service(tmp_path / "served") as running, \
            BlockingMemory(AsyncRemoteMemory(running.url, user_id=fresh_user)) as remote:
        assert differential_script(remote) == expected


@pytest.mark.parametrize("kind", ["manager", "remote"])
def test_many_calls_in_flight_at_once_each_stored_once(kind: str, service: RunningService, tmp_path: Path,
                                                       fresh_user: str) -> None:
    # More adds at once than the service's write slots per user: the ones it turns away (429) wait
    # for its Retry-After and try again; every add is stored exactly once.
    def memory() -> AsyncMemoryManager | AsyncRemoteMemory:
        if kind == "manager":
            return _manager(tmp_path / "data", fresh_user)
        return AsyncRemoteMemory(service.url, user_id=fresh_user, retries=10)

    async def burst() -> tuple[list[object], list[object], int]:
        async with memory() as mm:
            added = await asyncio.gather(*(mm.add(f"note {n}", memory_type="episodic") for n in range(24)))
            found = await asyncio.gather(*(mm.get(item.id) for item in added), mm.search("note 7", limit=3))
            return list(added), list(found[:-1]), (await mm.stats()).total

    added, found, total = asyncio.run(burst())
    # by id and content: the search in flight beside the gets may count an access of one of them
    assert [(f.id, f.content) for f in found] == [(a.id, a.content) for a in added]  # type: ignore[attr-defined]
    assert total == 24 and sorted(a.content for a in added) == sorted(f"note {n}" for n in range(24))  # type: ignore[attr-defined]
