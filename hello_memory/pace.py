"""Long pure-Python loops of a write let other threads' reads through: :func:`pace`.

A write of thousands of memories spends seconds in Python per item — building and validating items,
aligning a re-sent conversation, tokenising, building rows and points — without waiting on anything.
A search in another thread needs the GIL many times (each store call releases and retakes it); every
time it gives it up, the writer takes it back and CPython lets the searcher wait up to its switch
interval (5 ms) for it again: the convoy effect. Measured (``python -m benchmarks.concurrency
stalls``, TF-IDF): alice's slowest search while bob adds a conversation of 10,000 messages was
0.89 s in process and 0.99 s through the service, most of it while the items were built; with
:func:`pace` in those loops 0.12 s and 0.34 s (BENCHMARKS.md "Concurrency", "Pacing the writer's Python").

``pace()`` releases the GIL and takes it back at once (``time.sleep(0)``), so a thread waiting for
it runs now instead of after the switch interval — at most once per :data:`EVERY` seconds of the
calling thread, so that a writer does not hand the GIL away thousands of times a second (once per
item, bob's 10,000-message add took 2.4× as long beside alice's searches). It changes nothing
process-wide (not the switch interval, not a thread's priority); call it once per item in a loop
that may run over thousands (a write, a scan of a whole store), outside any lock a reader takes.
A search runs :func:`unpaced`: the helpers it shares with writes (tokenising, rebuilding rows) do not
make it give the GIL away.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

EVERY = 0.00025  # seconds of a thread's work between two yields
_last = threading.local()


def pace() -> None:
    """Let a thread waiting for the GIL run now, when :data:`EVERY` has passed since this thread last
    did (never inside :func:`unpaced`)."""
    state = _last.__dict__
    now = time.perf_counter()
    if now - state.get("t", 0.0) >= EVERY and not state.get("off"):
        time.sleep(0)
        state["t"] = time.perf_counter()


@contextmanager
def unpaced() -> Iterator[None]:
    """A short read (a search) runs its shared helpers unpaced: a yield hands the GIL to whoever
    waits — a writer's paced loop, a background thread — and costs the reader up to :data:`EVERY`
    or a switch interval each time (6 yields were 0.5 ms of a 24 ms search at 10,000 memories)."""
    state = _last.__dict__
    state["off"] = state.get("off", 0) + 1
    try:
        yield
    finally:
        state["off"] -= 1
