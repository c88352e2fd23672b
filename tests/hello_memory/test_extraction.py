"""Rule-based and LLM entity/relation extraction."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from hello_memory.errors import InvalidInputError, LLMError
from hello_memory.language.extraction import (
    FUNCTIONAL_RELATIONS,
    RELATION_TYPES,
    Extraction,
    LLMExtractor,
    entity_id,
    extract,
    normalise_name,
)
from hello_memory.llm.base import LLMResponse


def names(ex: Extraction) -> dict[str, str]:
    return dict(ex.entities)


def assert_well_formed(ex: Extraction) -> None:
    known = {normalise_name(n) for n, _ in ex.entities}
    for source, rel, target in ex.relations:
        assert rel in RELATION_TYPES
        assert normalise_name(source) in known and normalise_name(target) in known
        assert normalise_name(source) != normalise_name(target)


# -- names and ids ---------------------------------------------------------------------------


def test_normalise_name_folds_width_case_and_spaces():
    assert normalise_name("  Ａｌｉｃｅ \t SMITH ") == "alice smith"
    assert normalise_name("北京") == "北京"


def test_entity_ids_are_stable_uuids_per_user():
    eid = entity_id("u1", "Alice")
    assert uuid.UUID(eid).version == 5
    assert eid == entity_id("u1", " ALICE ") == entity_id("u1", "Ａｌｉｃｅ")
    assert eid != entity_id("u2", "Alice")
    assert entity_id("u1", "咖啡") == entity_id("u1", "咖啡")


@pytest.mark.parametrize(("user_id", "name"), [("", "Alice"), ("u1", ""), ("u1", "   ")])
def test_entity_id_rejects_empty_input(user_id, name):
    with pytest.raises(InvalidInputError):
        entity_id(user_id, name)


def test_functional_relations_are_part_of_the_vocabulary():
    functional = set(FUNCTIONAL_RELATIONS)
    assert functional == {"is", "lives_in", "works_at"}
    assert functional <= set(RELATION_TYPES)


def test_to_links_gives_graph_store_arguments():
    ex = Extraction([("Alice", "person"), ("Paris", "place")], [("Alice", "lives_in", "Paris")])
    entities, relations = ex.to_links("u1")
    a, p = entity_id("u1", "Alice"), entity_id("u1", "Paris")
    assert entities == [(a, "Alice", "person"), (p, "Paris", "place")]
    assert relations == [(a, p, "lives_in")]


# -- Chinese ---------------------------------------------------------------------------------


def test_chinese_person_place_and_lives_in():
    ex = extract("张三住在北京，他喜欢喝咖啡")
    assert names(ex)["张三"] == "person"
    assert names(ex)["北京"] == "place"
    assert ("张三", "lives_in", "北京") in ex.relations
    assert ("张三", "likes", "咖啡") in ex.relations  # 他 resolves to 张三
    assert_well_formed(ex)


def test_chinese_first_person_is_the_user():
    ex = extract("我喜欢咖啡")
    assert ex.relations == [("user", "likes", "咖啡")]
    assert names(ex) == {"user": "person", "咖啡": "concept"}


@pytest.mark.parametrize(
    ("text", "triple"),
    [
        ("李明华在阿里巴巴工作", ("李明华", "works_at", "阿里巴巴")),
        ("我是程序员", ("user", "is", "程序员")),
        ("我不喜欢吃香菜", ("user", "dislikes", "香菜")),
        ("我最喜欢的水果是芒果", ("user", "likes", "芒果")),
        ("王老师是清华大学的教授", ("王老师", "is", "教授")),
        ("我养了一只猫", ("user", "has", "猫")),
    ],
)
def test_chinese_relation_patterns(text, triple):
    ex = extract(text)
    assert triple in ex.relations
    assert_well_formed(ex)


def test_chinese_subject_carries_over_a_comma():
    ex = extract("我在Google工作，住在北京市朝阳区")
    assert ("user", "works_at", "Google") in ex.relations
    assert ("user", "lives_in", "北京市朝阳区") in ex.relations
    assert names(ex)["Google"] == "organization"


def test_chinese_speaker_prefix_and_coordinated_objects():
    ex = extract("用户：我是一名数据科学家，平时喜欢跑步和看电影")
    want = {("user", "is", "数据科学家"), ("user", "likes", "跑步"), ("user", "likes", "电影")}
    assert want <= set(ex.relations)


# -- English ---------------------------------------------------------------------------------


def test_english_works_at_and_lives_in_share_the_subject():
    ex = extract("Alice works at Acme Corp and lives in Paris")
    assert ("Alice", "works_at", "Acme Corp") in ex.relations
    assert ("Alice", "lives_in", "Paris") in ex.relations
    assert names(ex) == {"Alice": "person", "Acme Corp": "organization", "Paris": "place"}
    assert_well_formed(ex)


def test_english_first_person_likes_a_noun_phrase():
    ex = extract("I love green tea")
    assert ex.relations == [("user", "likes", "green tea")]
    assert "green" not in names(ex)


@pytest.mark.parametrize(
    ("text", "triple"),
    [
        ("Bob is a doctor", ("Bob", "is", "doctor")),
        ("I'm a teacher", ("user", "is", "teacher")),
        ("I don't like cold weather", ("user", "dislikes", "cold weather")),
        ("I moved to San Diego last year", ("user", "lives_in", "San Diego")),
        ("Bob's favourite band is Green Day", ("Bob", "likes", "Green Day")),
        ("My favorite food is sushi", ("user", "likes", "sushi")),
        ("I have two dogs", ("user", "has", "dog")),
        ("Maria works for the University of Toronto", ("Maria", "works_at", "University of Toronto")),
    ],
)
def test_english_relation_patterns(text, triple):
    ex = extract(text)
    assert triple in ex.relations
    assert_well_formed(ex)


def test_he_and_she_resolve_to_the_last_person_with_a_fact():
    ex = extract("Bob's favourite band is Green Day. He works for Google.")
    assert ("Bob", "works_at", "Google") in ex.relations


def test_chat_speaker_is_the_first_person():
    ex = extract("Caroline: I went to the LGBTQ support group yesterday")
    assert names(ex)["Caroline"] == "person"
    assert {"LGBTQ", "support group"} <= set(names(ex))
    assert "user" not in names(ex) and "yesterday" not in names(ex)
    assert ("Caroline", "related_to", "support group") in ex.relations
    assert extract("Melanie: I love painting").relations == [("Melanie", "likes", "painting")]


def test_like_as_a_preposition_or_wish_is_not_a_preference():
    assert extract("It looks like rain").relations == []
    assert not any(r == "likes" for _, r, _ in extract("I would like to visit Paris").relations)


def test_cooccurrence_is_capped_and_sentence_bound():
    text = " ".join(f"Person{i} met Friend{i} at the Cafe{i}." for i in range(20))
    ex = extract(text)
    assert len(ex.entities) <= 12
    assert sum(1 for _, r, _ in ex.relations if r == "related_to") <= 10
    assert_well_formed(ex)


def test_many_stated_facts_stay_within_the_entity_cap():
    text = "; ".join(f"Person{i} lives in City{i}" for i in range(10))
    ex = extract(text)
    assert len(ex.entities) <= 12
    assert ("Person0", "lives_in", "City0") in ex.relations
    assert_well_formed(ex)


@pytest.mark.parametrize("text", ["", "   ", "！？。，", "...!!!", "\n\t"])
def test_empty_or_punctuation_only_text_gives_nothing(text):
    assert extract(text) == Extraction()


# -- LLM -------------------------------------------------------------------------------------


class FixedLLM:
    """A tiny LLMClient returning fixed content (or raising) and recording the messages."""

    def __init__(self, content: str = "", error: Exception | None = None) -> None:
        self.content, self.error = content, error
        self.calls: list[list[dict[str, Any]]] = []

    @property
    def name(self) -> str:
        return "fixed"

    def complete(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Any = None,
        temperature: float = 0.2,
        max_tokens: int | None = None,
    ) -> LLMResponse:
        self.calls.append(list(messages))
        if self.error:
            raise self.error
        return LLMResponse(content=self.content)


def test_llm_extractor_parses_valid_json():
    llm = FixedLLM(
        '```json\n{"entities": [{"name": "Alice", "type": "person"}, {"name": "Paris", "type": "place"}],'
        ' "relations": [{"source": "Alice", "type": "lives in", "target": "Paris"}]}\n```'
    )
    ex = LLMExtractor(llm).extract("Alice lives in Paris")
    assert ex == Extraction([("Alice", "person"), ("Paris", "place")], [("Alice", "lives_in", "Paris")])
    assert llm.calls[0][-1] == {"role": "user", "content": "Alice lives in Paris"}


def test_llm_extractor_maps_unknown_types_and_adds_missing_endpoints():
    llm = FixedLLM(
        '{"entities": [{"name": "user", "type": "human"}], '
        '"relations": [{"source": "user", "type": "adores", "target": "tea"}]}'
    )
    ex = LLMExtractor(llm).extract("I adore tea")
    assert ex.entities == [("user", "concept"), ("tea", "concept")]
    assert ex.relations == [("user", "related_to", "tea")]


@pytest.mark.parametrize(
    "content",
    [
        "not json at all",
        '{"entities": [], "relations": [}',
        "[]",
        '{"entities": [{"name": "Alice"}], "relations": []}',
        '{"entities": [{"name": "", "type": "person"}], "relations": []}',
        '{"entities": [], "relations": [{"source": "a", "target": "b"}]}',
        '{"entities": "Alice", "relations": []}',
        '{"entities": []}',
    ],
)
def test_llm_extractor_falls_back_to_rules_on_bad_output(content, caplog):
    ex = LLMExtractor(FixedLLM(content)).extract("Alice works at Acme Corp and lives in Paris")
    assert ex == extract("Alice works at Acme Corp and lives in Paris")
    assert "using rule-based extraction" in caplog.text


def test_llm_extractor_falls_back_when_the_llm_fails(caplog):
    ex = LLMExtractor(FixedLLM(error=LLMError("timeout"))).extract("我喜欢咖啡")
    assert ex.relations == [("user", "likes", "咖啡")]
    assert "LLMError" in caplog.text


def test_llm_extractor_skips_the_llm_for_empty_text():
    llm = FixedLLM("{}")
    assert LLMExtractor(llm).extract("  ") == Extraction()
    assert llm.calls == []
