"""Only what cleared the relevance floor reaches a prompt (issue 35 §1).

Since ``floor_scope="question"`` a question with one memory above the floor gets every other candidate
after it, marked ``below_floor``; ``build_context`` used to put them all in ("what time is it now?":
20 memories, 19 below the floor). A list of hits may hold them (recall at depth); a prompt may not.
"""

from __future__ import annotations

from pathlib import Path

from hello_memory import MemoryManager, Settings
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

LIFE = [
    "Alex was born on 3 May 2015",
    "My dentist appointment is on Friday at 3pm",
    "We adopted a puppy called Oscar from the shelter",
    "Dinner at the new Italian place downtown was great",
    "I turned 30 that spring",
]
QUESTION = "When was Alex born?"  # only LIFE[0] clears the floor (its words); the others follow it


def _manager(home: Path) -> MemoryManager:
    # the fake embedder's cosines mean nothing: a cosine floor no paraphrase clears, so words decide
    settings = Settings(home=home, floor_cosine=0.99)
    return MemoryManager(settings, user_id="u", embedder=DeterministicFakeEmbedder(32))


def test_search_returns_the_others_marked_below_the_floor(tmp_path: Path) -> None:
    with _manager(tmp_path) as mm:
        ids = [m.id for m in mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])]
        hits = mm.search(QUESTION, limit=10)
        assert [h.item.id for h in hits][:1] == [ids[0]] and len(hits) == len(LIFE)
        assert [h.below_floor for h in hits] == [False] + [True] * (len(LIFE) - 1)


def test_build_context_holds_only_what_cleared_the_floor(tmp_path: Path) -> None:
    with _manager(tmp_path) as mm:
        ids = [m.id for m in mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])]
        block = mm.build_context(QUESTION, budget_tokens=2000)
        assert [h.item.id for h in block.hits] == [ids[0]]
        assert LIFE[0] in block.text and not any(t in block.text for t in LIFE[1:])
        assert block.dropped == 0  # below the floor is not "left out by the budget"
        assert mm.build_context("quantum chromodynamics lattice", budget_tokens=2000).text == ""
