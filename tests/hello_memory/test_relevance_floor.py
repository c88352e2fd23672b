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
from hello_memory.core.relevance import Floor, evidence_text, has_evidence
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


@pytest.fixture(scope="module")
def e5() -> object:
    from hello_memory.embedders.e5 import E5Embedder

    return E5Embedder()


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


def test_e5_off_topic_queries_return_nothing_and_related_ones_find_their_memory(tmp_path: Path, e5: object) -> None:
    """The calibrated e5 floor (0.819 for English questions, 0.878 for Chinese ones): unrelated texts
    reach ~0.78-0.81 with e5-small in English, a paraphrase with no shared word clears it."""
    with _manager(tmp_path, e5) as mm:
        ids = [m.id for m in mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])]
        for query in OFF_TOPIC:
            assert mm.search(query, memory_types=["episodic"]) == [], query
        top = mm.search("Did we get a dog?", memory_types=["episodic"])[0]  # no word in common
        assert top.item.id == ids[2] and top.breakdown["dense"] >= 0.82


def test_e5_floor_is_what_the_folds_chose(tmp_path: Path, e5: object) -> None:
    """Not 0.80 (issue 20: the cross-validation folds of LoCoMo and LongMemEval chose 0.82; the
    per-script calibration gives English 0.819). At 0.80 an unrelated memory passed for a question
    about another one: here the garden-theory memory reaches cosine 0.80-0.81 for a question about
    the dentist, and was returned with it. Judged memory by memory (``floor_scope="memory"``); by
    default the question is answered and the others rank below it (tests/hello_memory/test_floor_scope.py)."""
    with _manager(tmp_path, e5, floor_scope="memory") as mm:
        ids = [m.id for m in mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])]
        hits = mm.search("when is my dentist appointment?", memory_types=["episodic"])
        assert [h.item.id for h in hits] == [ids[1]]


def test_memories_that_fit_a_named_time_pass_the_floor(tmp_path: Path) -> None:
    asked = datetime(2024, 6, 14, 12, tzinfo=timezone.utc)
    with _manager(tmp_path, DeterministicFakeEmbedder(32), floor_scope="memory") as mm:
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


# Issue 26 §3: Chinese personal memories and Chinese questions about something else, written for this
# test. With one floor for both scripts (0.82) 7 of these 10 questions got memories back (cosines
# 0.82-0.84: e5-small gives unrelated Chinese texts higher cosines than English ones).
LIFE_ZH = [
    "我女儿下个月要参加钢琴考级。",
    "我每周一和周四晚上去健身房练腿。",
    "上个月我把旧手机卖给了同事。",
    "我老公对花生过敏。",
    "周末我们带爸妈去西湖边喝茶了。",
    "我的车牌尾号是7，周五限行。",
    "公司年会定在一月十八号。",
    "我最近在追一部讲宫廷的古装剧。",
    "儿子的班主任姓刘，很严格。",
    "我们家阳台上种了三盆多肉。",
    "我在学做广式早茶的虾饺。",
    "我表弟在杭州开了一家奶茶店。",
    "体检报告显示我有点贫血。",
    "房贷每月十五号自动扣款。",
    "护照放在卧室衣柜的保险箱里。",
    "我喜欢周杰伦的老歌。",
    "我们小区的快递柜在三号楼下面。",
    "上周五我和大学室友聚餐吃了火锅。",
    "我每天晚上十点给妈妈发微信。",
    "我家猫叫汤圆，是只橘猫。",
    "我计划国庆节去西安看兵马俑。",
    "我最近腰疼，医生让我少久坐。",
    "我答应了同事周六帮他搬家。",
    "我对咖啡因很敏感，下午不喝茶。",
    "女儿的生日是九月二十号。",
    "我们打算把客厅的窗帘换成灰色的。",
    "我在网上报了一个摄影入门课。",
    "我上次理发是在小区门口那家店。",
    "我的笔记本电脑键盘有个键坏了。",
    "我们每年清明回老家给爷爷扫墓。",
]
OFF_TOPIC_ZH = [
    "珠穆朗玛峰有多高？",
    "光合作用需要哪些条件？",
    "唐朝的首都是哪座城市？",
    "圆的面积怎么算？",
    "太阳系最大的行星是哪个？",
    "牛顿第三定律讲的是什么？",
    "长江全长多少公里？",
    "比特币是怎么挖矿的？",
    "怎样配置Nginx反向代理？",
    "第一次世界大战是哪一年爆发的？",
]


def test_chinese_off_topic_questions_return_nothing_over_chinese_memories(tmp_path: Path, e5: object) -> None:
    with _manager(tmp_path, e5) as mm:
        ids = [m.id for m in mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE_ZH])]
        for query in OFF_TOPIC_ZH:
            assert mm.search(query, memory_types=["episodic"]) == [], query
        for query, i in [("我家猫是什么品种？", 19), ("女儿什么时候考钢琴？", 0), ("我的护照放哪儿了？", 14)]:
            hits = mm.search(query, memory_types=["episodic"])
            assert hits and hits[0].item.id == ids[i], query


# Issue 27 §3: a time the query names is no evidence of its topic. Memories said today, yesterday and
# earlier; questions about the world that name "today" or "yesterday" (written for this test).
ASKED = datetime(2024, 6, 14, 12, tzinfo=timezone.utc)
DAYS_AGO = [0, 0, 0, 1, 1, 1, 2, 7, 30]
DAYS_EN = [
    "My shoe size is 10.5.",
    "Bought a new pair of running shoes.",
    "Had a video call with the bank about my mortgage.",
    "Cooked a lamb curry for dinner.",
    "Called my sister about her new job.",
    "Took the dog to the vet for his vaccinations.",
    "Went to the dentist for a filling.",
    "Finished reading a novel about a lighthouse keeper.",
    "Renewed the car insurance.",
]
DAYS_ZH = [
    "我穿四十三码的鞋。",
    "买了一双新跑鞋。",
    "和银行视频通话谈了房贷的事。",
    "晚饭做了咖喱羊肉。",
    "给姐姐打电话聊她的新工作。",
    "带狗去宠物医院打了疫苗。",
    "去牙医那里补了牙。",
    "读完了一本讲灯塔看守人的小说。",
    "续了车险。",
]
TIMED_OFF_TOPIC = {
    "en": [
        "What's the weather like today?",
        "Who won the football match yesterday?",
        "How is the stock market doing today?",
        "What's in the news today?",
        "What time does the sun set today?",
    ],
    "zh": ["今天天气怎么样？", "昨天谁赢了足球比赛？", "今天股市行情如何？", "今天有什么新闻？", "今天几点日落？"],
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_time_word_is_not_evidence_of_topic(tmp_path: Path, e5: object, lang: str) -> None:
    texts = DAYS_EN if lang == "en" else DAYS_ZH
    with _manager(tmp_path, e5) as mm:
        ids = [
            mm.add(t, memory_type="episodic", created_at=ASKED - timedelta(days=d, hours=2)).id
            for t, d in zip(texts, DAYS_AGO, strict=True)
        ]
        for query in TIMED_OFF_TOPIC[lang]:
            assert mm.search(query, memory_types=["episodic"], reference_time=ASKED) == [], query
        on_topic = "What did I cook yesterday?" if lang == "en" else "我昨天做了什么菜？"
        hits = mm.search(on_topic, memory_types=["episodic"], reference_time=ASKED)
        assert hits and hits[0].item.id == ids[3] and hits[0].breakdown["time"] == 1.0


def test_a_question_about_nothing_but_a_time_still_gets_that_time(tmp_path: Path, e5: object) -> None:
    """"What did I do yesterday?" names no topic to be off: what was said yesterday is the answer."""
    with _manager(tmp_path, e5) as mm:
        ids = [
            mm.add(t, memory_type="episodic", created_at=ASKED - timedelta(days=d, hours=2)).id
            for t, d in zip(DAYS_EN, DAYS_AGO, strict=True)
        ]
        hits = mm.search("What did I do yesterday?", memory_types=["episodic"], reference_time=ASKED)
        assert set(ids[3:6]) <= {h.item.id for h in hits}
