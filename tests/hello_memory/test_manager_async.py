"""``AsyncMemoryManager``: opened lazily in a worker thread, calls side by side, exports and imports as async iterators.

The slow operation is an add whose embedding waits at a gate (:class:`GatedEmbedder`): the tests
decide when it ends and assert what completed before, never how long anything took.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hello_memory import AsyncMemoryManager, MemoryManager, Settings
from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder, GatedEmbedder


def _async(home: Path, **kwargs: object) -> AsyncMemoryManager:
    return AsyncMemoryManager(Settings(home=home), user_id="alice", embedder=DeterministicFakeEmbedder(), **kwargs)


def test_nothing_opens_before_the_first_call_and_it_opens_once(tmp_path: Path) -> None:
    mm = _async(tmp_path / "data")
    assert not (tmp_path / "data").exists()
    with pytest.raises(InvalidInputError, match="not open yet"):
        mm.manager  # noqa: B018

    async def use() -> None:
        first, second = await asyncio.gather(mm.stats(), mm.get_all())  # both ask to open: one manager
        assert (first.total, second) == (0, [])
        manager = mm.manager
        assert await mm.open() is mm and mm.manager is manager and manager.bundle.home is not None

    asyncio.run(use())
    asyncio.run(mm.aclose())  # another event loop: the opening lock is a thread lock
    asyncio.run(mm.aclose())
    with pytest.raises(InvalidInputError, match="closed"):
        asyncio.run(mm.stats())


def test_wrap_is_a_view_of_an_open_manager_and_closing_it_closes_the_manager(tmp_path: Path) -> None:
    manager = MemoryManager(Settings(home=tmp_path / "data", embedder="tfidf"), user_id="bob")
    mm = AsyncMemoryManager.wrap(manager)
    assert (mm.user_id, mm.enabled, mm.manager) == ("bob", manager.enabled, manager)

    async def use() -> str:
        async with mm:
            return (await mm.add("bob likes chess", memory_type="semantic")).id

    memory_id = asyncio.run(use())
    with pytest.raises(InvalidInputError, match="closed"):
        manager.get(memory_id)


def test_a_slow_call_leaves_the_loop_and_the_other_calls_running(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    mm = AsyncMemoryManager(Settings(home=tmp_path / "data"), user_id="alice", embedder=embedder)

    async def scenario() -> list[str]:
        done: list[str] = []
        await mm.add("tea at noon", memory_type="episodic")
        slow = asyncio.create_task(mm.add("a SLOW memory to embed", memory_type="episodic"))
        assert await asyncio.to_thread(embedder.reached), "the slow add never reached the embedder"
        hits = await mm.search("tea at noon")
        done.append(f"search {hits[0].item.content}")
        other = await mm.add("coffee at ten", memory_type="episodic", user_id="carol")
        done.append(f"add {other.content}")
        done.append(f"get_all {len(await mm.get_all(user_id='carol'))}")
        assert not slow.done()  # everything above finished while the slow add waited in its thread
        embedder.gate.set()
        done.append(f"slow {(await slow).content}")
        return done

    try:
        assert asyncio.run(scenario()) == ["search tea at noon", "add coffee at ten", "get_all 1",
                                           "slow a SLOW memory to embed"]
    finally:
        embedder.gate.set()
        mm.close()


def test_a_cancelled_call_still_completes_in_its_thread(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    mm = AsyncMemoryManager(Settings(home=tmp_path / "data"), user_id="alice", embedder=embedder)

    async def cancel() -> None:
        slow = asyncio.create_task(mm.add("a SLOW note", memory_type="semantic"))
        assert await asyncio.to_thread(embedder.reached)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        embedder.gate.set()  # asyncio.run then waits for the worker thread before it returns

    try:
        asyncio.run(cancel())
        assert [m.content for m in asyncio.run(mm.get_all())] == ["a SLOW note"]  # all or nothing: all
    finally:
        embedder.gate.set()
        mm.close()


async def _lines(lines: list[str]) -> AsyncIterator[str]:
    for line in lines:
        yield line


def test_export_is_an_async_iterator_and_import_takes_one(tmp_path: Path) -> None:
    async def move() -> list[str]:
        async with _async(tmp_path / "a") as source, _async(tmp_path / "b") as target:
            await source.add_many([{"content": f"note {n}", "memory_type": "episodic"} for n in range(600)])
            lines = [line async for line in source.export_lines()]  # more than one batch of lines
            report = await target.import_lines(_lines(lines))
            assert report.memories == 600
            again = await target.import_lines(lines)  # a plain iterable too; idempotent by id
            assert again.memories == 600
            return sorted(m.content for m in await target.get_all())

    assert asyncio.run(move()) == sorted(f"note {n}" for n in range(600))


def test_errors_are_the_managers(tmp_path: Path) -> None:
    async def fail() -> None:
        async with _async(tmp_path / "data") as mm:
            with pytest.raises(NotFoundError):
                await mm.get("00000000-0000-4000-8000-000000000000")
            with pytest.raises(InvalidInputError, match="importance"):
                await mm.add("x", importance=3)
            with pytest.raises(InvalidInputError):
                await mm.import_lines(_lines(["not json"]))
            assert await mm.recover() == 0 and await mm.get_all() == []

    asyncio.run(fail())
