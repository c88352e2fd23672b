"""Long write loops let a waiting reader through (hello_memory.pace); what it buys is measured in
BENCHMARKS.md ("Concurrency"), not here: these tests check only where it is called and how often."""

from __future__ import annotations

from pathlib import Path

import pytest

from hello_memory import MemoryManager, Settings, pace
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder


@pytest.fixture
def yields(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every time pace() gives the GIL away."""
    calls: list[float] = []
    monkeypatch.setattr(pace.time, "sleep", calls.append)
    return calls


def test_a_thread_yields_at_most_once_per_interval(yields: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    monkeypatch.setattr(pace, "_last", threading.local())  # this thread has not yielded yet
    monkeypatch.setattr(pace, "EVERY", 0.001)
    clock = iter(range(1_000_000))
    monkeypatch.setattr(pace.time, "perf_counter", lambda: next(clock) * 1e-6)  # 1 µs per reading
    for _ in range(2000):
        pace.pace()
    # each call reads the clock once (twice when it yields): 1 ms apart is about every 1,000 calls
    assert 1 <= len(yields) <= 4 and all(y == 0 for y in yields)


def test_writes_and_scans_of_many_items_pace_every_item(tmp_path: Path, yields: list[float],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pace, "EVERY", 0.0)
    with MemoryManager(Settings(home=tmp_path), user_id="bob", embedder=DeterministicFakeEmbedder(8)) as mm:
        yields.clear()
        mm.add_many([{"content": f"note {n}", "memory_type": "episodic"} for n in range(50)])
        assert len(yields) >= 50 * 3  # item, tokens, vector point
        yields.clear()
        mm.add([{"role": "user", "content": f"message {n}"} for n in range(40)], session_id="s")
        assert len(yields) >= 40 * 4  # item, alignment view and plan, tokens, point
        yields.clear()
        lines = list(mm.export_lines(users=["bob"]))
        assert len(yields) >= 90 * 2  # rows rebuilt and lines written
        mm.clear_all()
        yields.clear()
        mm.import_lines(lines)
        assert len(yields) >= 90


def test_tokenising_one_long_text_paces_within_it(yields: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    """A 200,000-character memory is one item but 0.1–0.4 s of tokenising each for the lexical index
    and for e5: both yield inside the text, not only once per item."""
    from hello_memory.embedders._e5_local import LocalE5
    from hello_memory.language.text import lexical_tokens

    monkeypatch.setattr(pace, "EVERY", 0.0)
    text = " ".join(f"sentence {n} about the harbour 和港口的第{n}句话" for n in range(300))
    yields.clear()
    lexical_tokens(text)
    assert len(yields) >= 300  # a yield per script run at least
    tokenizer = LocalE5(backend="numpy").tokenizer
    yields.clear()
    tokenizer.content_ids(text)
    assert len(yields) >= 300 * 4  # a yield per word at least


def test_a_search_never_pays_for_a_yield(tmp_path: Path, yields: list[float],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A search meets pace() in the helpers it shares with writes (its query tokenised, its hits'
    rows): it runs unpaced and gives the GIL to nobody (a yield cost it up to 0.25 ms each)."""
    with MemoryManager(Settings(home=tmp_path), user_id="bob", embedder=DeterministicFakeEmbedder(8)) as mm:
        mm.add_many([{"content": f"note {n} about the harbour", "memory_type": "episodic"} for n in range(30)])
        monkeypatch.setattr(pace, "EVERY", 0.0)
        yields.clear()
        hits = mm.search("harbour note", limit=10)
        assert len(hits) == 10
    assert yields == []


def test_a_document_search_never_pays_for_a_yield(tmp_path: Path, yields: list[float],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from rag import RAGPipeline

    with RAGPipeline(home=tmp_path / "data", namespace="kb", embedder=DeterministicFakeEmbedder(16)) as p:
        p.add_text("# Harbour\n\n" + " ".join(f"The harbour note {n} says boats leave at dawn." for n in range(40)),
                   source="harbour.md")
        monkeypatch.setattr(pace, "EVERY", 0.0)
        yields.clear()
        assert p.search("when do boats leave the harbour", limit=3).hits
    assert yields == []
