"""What the relevance floor decides (issue 26 §2): whether a question gets an answer, not which
pieces of evidence make it.

The floor's cosine is set where about one unrelated memory in 500 clears it. The other pieces of a
multi-part answer each match only part of the question, and judged one by one they were cut from
the list (LongMemEval_S: turn recall@20 and "every evidence session in the top 10" below plain
dense search). By default (``floor_scope="question"``) a question with one survivor gets the
whole ranked list; a question with none still gets nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.core.floor import admitted
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

LIFE = [
    "My dentist appointment is on Friday at 3pm",
    "Alex was born on 3 May 2015",
    "I turned 30 that spring",  # shares no word with the question
    "We adopted a puppy called Oscar from the shelter",
    "Dinner at the new Italian place downtown was great",
]
OFF_TOPIC = "quantum chromodynamics lattice gauge theory"


def _manager(home: Path, **settings: object) -> MemoryManager:
    # the fake embedder's cosines mean nothing (only identical texts match): a floor no paraphrase clears
    return MemoryManager(
        Settings(home=home, floor_cosine=0.99, **settings),  # type: ignore[arg-type]
        user_id="u",
        embedder=DeterministicFakeEmbedder(32),
    )


def test_a_question_that_clears_the_floor_gets_the_rest_of_the_evidence_ranked_below(tmp_path: Path) -> None:
    with _manager(tmp_path) as mm:
        ids = [m.id for m in mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])]
        hits = mm.search("When was Alex born?", memory_types=["episodic"], limit=10)
        assert hits[0].item.id == ids[1]  # the memory that clears the floor ranks first
        assert ids[2] in [h.item.id for h in hits]  # the other half of "how old was I when ...?"
        assert len(hits) == len(LIFE)  # every candidate: the survivors first, then the others
        assert [h.breakdown["below_floor"] for h in hits] == [0.0] + [1.0] * (len(LIFE) - 1)


def test_the_survivors_rank_first_even_below_a_better_scored_candidate(tmp_path: Path) -> None:
    """The list judged memory by memory is the beginning of the list judged by question."""
    with _manager(tmp_path) as mm:
        mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])
        # a recent memory without the question's words scores higher on recency than the old survivor
        old = mm.add("Alex was born in a spring storm", memory_type="episodic", importance=0.0,
                     created_at="2001-01-01T00:00:00+00:00")  # fmt: skip
        hits = mm.search("Alex born spring storm?", memory_types=["episodic"], limit=10)
        survivors = [h for h in hits if not h.breakdown["below_floor"]]
        assert hits[: len(survivors)] == survivors and old.id in [h.item.id for h in survivors]
        assert max(h.score for h in hits[len(survivors) :]) > min(h.score for h in survivors)
    with _manager(tmp_path, floor_scope="memory") as mm:
        judged = mm.search("Alex born spring storm?", memory_types=["episodic"], limit=10)
        assert [h.item.id for h in judged] == [h.item.id for h in survivors]


def test_judged_memory_by_memory_only_the_survivors_are_returned(tmp_path: Path) -> None:
    with _manager(tmp_path, floor_scope="memory") as mm:
        ids = [m.id for m in mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])]
        hits = mm.search("When was Alex born?", memory_types=["episodic"], limit=10)
        assert [h.item.id for h in hits] == [ids[1]]


@pytest.mark.parametrize("scope", ["question", "memory"])
def test_a_question_about_nothing_stored_gets_nothing_under_either_scope(tmp_path: Path, scope: str) -> None:
    with _manager(tmp_path, floor_scope=scope) as mm:
        mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])
        assert mm.search(OFF_TOPIC, memory_types=["episodic"], limit=10) == []
        assert mm.build_context(OFF_TOPIC, budget_tokens=500).text == ""


def test_admitted() -> None:
    assert admitted({"a"}, {"a", "b", "c"}, "question") == {"a", "b", "c"}
    assert admitted({"a"}, {"a", "b", "c"}, "memory") == {"a"}
    assert admitted(set(), {"a", "b"}, "question") == set()
