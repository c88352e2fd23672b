"""MemoryTool driven through the registry exactly as a model would: JSON in, text and data out."""

from __future__ import annotations

import re

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.errors import InvalidInputError
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from tools.memory_tool import EPISODIC_MIN_TOKENS, MemoryTool
from tools.registry import ToolRegistry

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def snapshot(tool: MemoryTool) -> list[tuple]:
    return [(it.id, it.content, it.importance, it.updated_at, it.deleted_at)
            for it in tool.manager.get_all(user_id=tool.user_id, include_deleted=True)]


def total(tool: MemoryTool, user: str | None = None) -> int:
    return tool.manager.stats(user_id=user or tool.user_id).total


def test_add_keeps_content_type_importance_session_and_metadata(registry, memory_tool, call):
    r = call(registry, "memory", {"action": "add", "content": "加载了文档《Happy-LLM》",
                                  "memory_type": "episodic", "importance": 0.9,
                                  "event_type": "document_loaded", "concept": "LLM",
                                  "file_path": "docs/happy.pdf", "metadata": {"pages": 12}})
    assert r.ok and r.action == "add"
    mem = r.data.memory
    assert UUID.match(mem.id) and mem.id in r.text()
    assert "Stored episodic memory" in r.text()
    stored = memory_tool.manager.get(mem.id, user_id="alice")
    assert stored.content == "加载了文档《Happy-LLM》" and stored.importance == 0.9
    assert stored.event_type == "document_loaded"
    assert stored.metadata == {"pages": 12, "event_type": "document_loaded", "concept": "LLM",
                               "file_path": "docs/happy.pdf"}
    assert stored.session_id == memory_tool.session_id


def test_add_with_messages_stores_each_as_a_turn_of_the_session(registry, memory_tool, call):
    messages = [{"role": "user", "name": "Caroline", "content": "I joined a pottery class on Friday"},
                {"role": "assistant", "content": "How was the first lesson?"}]
    r = call(registry, "memory", {"action": "add", "messages": messages, "importance": 0.8})
    assert r.ok and r.action == "add", r.error
    turns = r.data.memories
    assert [t.content for t in turns] == ["Caroline: I joined a pottery class on Friday", "How was the first lesson?"]
    assert all(t.id in r.text() for t in turns) and "2 conversation turns" in r.text()
    stored = [memory_tool.manager.get(t.id, user_id="alice") for t in turns]
    assert [s.participants for s in stored] == [["Caroline"], ["assistant"]]
    assert {(s.memory_type, s.session_id, s.event_type, s.importance) for s in stored} == {
        ("episodic", memory_tool.session_id, "conversation", 0.8)}
    assert stored[0].created_at < stored[1].created_at
    again = call(registry, "memory", {"action": "add", "messages": messages, "importance": 0.8})
    assert [t.id for t in again.data.memories] == [t.id for t in turns] and total(memory_tool) == 2


def test_participants_named_in_a_search_rank_their_memories_first(registry, memory_tool, call):
    for name in ("Caroline", "Melanie"):
        r = call(registry, "memory", {"action": "add", "content": "went to the pottery class on Friday",
                                      "memory_type": "episodic", "participants": [name]})
        assert r.ok, r.error
    r = call(registry, "memory", {"action": "search", "query": "Where did Caroline go on Friday?", "limit": 2})
    first = memory_tool.manager.get(r.data.hits[0].id, user_id="alice")
    assert first.participants == ["Caroline"] and r.data.hits[0].breakdown["participant"] == 1.0


def test_automatic_session_id_per_instance_unless_given(memory_tool, settings, fake_embedder):
    assert re.match(r"^session_\d{8}_\d{6}_[0-9a-f]{8}$", memory_tool.session_id)
    other = MemoryTool(user_id="alice", manager=memory_tool.manager)
    assert other.session_id != memory_tool.session_id
    given = MemoryTool(user_id="alice", manager=memory_tool.manager, session_id="s-42")
    r = given.execute("add", content="hello")
    assert r.data.memory.session_id == "s-42"
    r = given.execute("add", content="hello again", session_id="explicit")
    assert r.data.memory.session_id == "explicit"


def test_search_returns_hits_with_full_ids_scores_and_quoted_text(registry, call):
    added = call(registry, "memory", {"action": "add", "content": "我叫张三，我是Python开发者",
                                      "memory_type": "semantic", "importance": 0.9})
    call(registry, "memory", {"action": "add", "content": "The weather is nice today", "importance": 0.3})
    r = call(registry, "memory", '{"action": "search", "query": "张三是做什么的", "limit": 3}')
    assert r.ok
    hits = r.data.hits
    assert hits and hits[0].id == added.data.memory.id and hits[0].score > 0
    assert hits[0].breakdown
    assert '"我叫张三，我是Python开发者"' in r.text() and added.data.memory.id in r.text()
    only = call(registry, "memory", {"action": "search", "query": "weather", "memory_type": "working"})
    assert {h.memory_type for h in only.data.hits} == {"working"}
    both = call(registry, "memory", {"action": "search", "query": "张三", "memory_type": "semantic",
                                     "memory_types": ["episodic"]})
    assert both.ok and {h.memory_type for h in both.data.hits} <= {"semantic", "episodic"}


def test_search_min_importance_filters(registry, call):
    call(registry, "memory", {"action": "add", "content": "minor detail about tea", "importance": 0.05})
    r = call(registry, "memory", {"action": "search", "query": "tea"})  # default min_importance 0.1
    assert r.data.hits == [] and "No memories match" in r.text()
    r = call(registry, "memory", {"action": "search", "query": "tea", "min_importance": 0.0})
    assert len(r.data.hits) == 1


def test_summary_and_stats(registry, memory_tool, call):
    call(registry, "memory", {"action": "add", "content": "Alice likes green tea", "memory_type": "semantic",
                              "importance": 0.8})
    s = call(registry, "memory", {"action": "summary", "limit": 5})
    assert "Alice likes green tea" in s.text() and s.data.stats.total == 1
    st = call(registry, "memory", '{"action": "stats"}')
    assert st.data.stats.by_type["semantic"] == 1 and st.data.session_id == memory_tool.session_id
    assert st.text().startswith('User "alice": 1 memory (working 0, episodic 0, semantic 1)')  # user id quoted


def test_update_and_remove(registry, memory_tool, call):
    mid = call(registry, "memory", {"action": "add", "content": "Alice lives in Paris",
                                    "memory_type": "semantic"}).data.memory.id
    r = call(registry, "memory", {"action": "update", "memory_id": mid, "content": "Alice lives in Berlin",
                                  "importance": 0.7, "metadata": {"source": "correction"}})
    assert r.ok and r.data.memory.content == "Alice lives in Berlin" and r.data.memory.importance == 0.7
    assert memory_tool.manager.get(mid, user_id="alice").metadata["source"] == "correction"
    r = call(registry, "memory", {"action": "remove", "memory_id": mid})
    assert r.ok and r.data.memory_id == mid and mid in r.text()
    assert total(memory_tool) == 0
    again = call(registry, "memory", {"action": "remove", "memory_id": mid})
    assert not again.ok and "no memory" in again.error and again.error_type == "NotFoundError"


def test_forget_is_restorable_and_consolidate_promotes(registry, memory_tool, call):
    low = call(registry, "memory", {"action": "add", "content": "trivia", "importance": 0.05}).data.memory.id
    call(registry, "memory", {"action": "add", "content": "用户在学习RAG", "importance": 0.8})
    r = call(registry, "memory", {"action": "forget", "strategy": "importance_based", "threshold": 0.1})
    assert r.ok and [f.id for f in r.data.forgotten] == [low] and r.data.restorable
    memory_tool.manager.restore(low, user_id="alice")
    c = call(registry, "memory", {"action": "consolidate", "from_type": "working", "to_type": "episodic",
                                  "importance_threshold": 0.7})
    assert c.ok and len(c.data.report.promoted) == 1
    promoted = memory_tool.manager.get(c.data.report.promoted[0], user_id="alice")
    assert promoted.memory_type.value == "episodic" and "用户在学习RAG" in promoted.content
    t = call(registry, "memory", {"action": "forget", "strategy": "time_based", "max_age_days": 0})
    assert t.ok and t.data.strategy == "time_based"
    cap = call(registry, "memory", {"action": "forget", "strategy": "capacity_based", "capacity": 0})
    assert cap.ok


def test_clear_all_needs_confirm_and_only_touches_this_user(registry, memory_tool, call):
    bob = MemoryTool(user_id="bob", manager=memory_tool.manager)
    bob.execute("add", content="bob's secret", memory_type="semantic")
    call(registry, "memory", {"action": "add", "content": "alice's note"})
    for args in ({"action": "clear_all"}, {"action": "clear_all", "confirm": False},
                 '{"action": "clear_all", "confirm": "true"}'):
        r = call(registry, "memory", args)
        assert not r.ok
        assert total(memory_tool) == 1
    r = call(registry, "memory", {"action": "clear_all", "confirm": True})
    assert r.ok and r.data.deleted == 1 and total(memory_tool) == 0
    assert total(memory_tool, "bob") == 1


@pytest.fixture(scope="module")
def shared_memory(tmp_path_factory):
    """One store for the many bad-input cases (opening a fresh store costs about a second)."""
    tool = MemoryTool(user_id="alice", settings=Settings(home=tmp_path_factory.mktemp("bad") / "data"),
                      embedder=DeterministicFakeEmbedder(dimension=32))
    tool.execute("add", content="existing", memory_type="semantic")
    tool.execute("add", content="working note")
    reg = ToolRegistry()
    reg.register(tool)
    yield reg, tool
    tool.close()


@pytest.mark.parametrize(("args", "needle"), [
    ('{"action": "search", "query": "x",', "not valid JSON"),
    ('["search"]', "must be a JSON object"),
    ('{"action": "search", "query": "x", "limit": NaN}', "not valid JSON"),
    ('{"action": "search", "query": "x", "limit": "5"}', "parameter 'limit'"),
    ('{"action": "search", "query": "x", "limit": 100000}', "less than or equal to 50"),
    ('{"action": "search", "query": "x", "limit": 0}', "parameter 'limit'"),
    ('{"action": "summary", "limit": 10000000000}', "parameter 'limit'"),
    ('{"action": "add", "content": "x", "importance": "high"}', "parameter 'importance'"),
    ('{"action": "add", "content": "x", "importance": 1.5}', "parameter 'importance'"),
    ('{"action": "add", "content": "x", "memory_type": "dream"}', "parameter 'memory_type'"),
    ('{"action": "add", "content": "x", "colour": "red"}', "unknown parameter 'colour'"),
    ('{"action": "add", "content": "   "}', "content is empty"),
    ('{"action": "add"}', "give either content (one memory) or messages"),
    ('{"action": "add", "content": "x", "messages": [{"role": "user", "content": "hi"}]}', "not both"),
    ('{"action": "add", "messages": []}', "parameter 'messages'"),
    ('{"action": "add", "messages": [{"role": "user"}]}', "parameter 'messages.0.content'"),
    ('{"action": "add", "messages": [{"role": "user", "content": "hi", "tool_calls": []}]}', "unknown parameter"),
    ('{"action": "add", "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b", '
     '"created_at": "soon"}]}', "message 1 created_at is not an ISO-8601"),
    ('{"action": "add", "messages": [{"role": "user", "content": "hi"}], "memory_type": "semantic"}',
     "leave out memory_type"),
    ('{"action": "add", "messages": [{"role": "user", "content": "hi"}], "participants": ["Ann"]}',
     "leave out participants"),
    ('{"action": "fly"}', "unknown action 'fly'"),
    ('{"content": "x"}', "missing parameter 'action'"),
    ('{"action": 3}', "unknown action 3"),
    ('{"action": "forget", "strategy": "random"}', "parameter 'strategy'"),
    ('{"action": "forget", "max_age_days": -1}', "parameter 'max_age_days'"),
    ('{"action": "update", "memory_id": "00000000-0000-0000-0000-000000000000"}', "at least one of"),
    ('{"action": "consolidate", "from_type": "working", "to_type": "working"}', "must differ"),
    ('{"action": "add", "content": "x", "memory_type": "perceptual"}', "not enabled"),
    ('{"action": "add", "content": "x", "participants": "Ann"}', "parameter 'participants'"),
    ('{"action": "add", "content": "x", "participants": ["Ann", " "]}', "non-empty names"),
])
def test_bad_arguments_are_error_results_and_change_nothing(shared_memory, call, args, needle):
    registry, tool = shared_memory
    before = tool.manager.stats(user_id="alice")
    items = snapshot(tool)
    r = call(registry, "memory", args)
    assert not r.ok and needle in r.error, r.error
    assert tool.manager.stats(user_id="alice") == before
    assert snapshot(tool) == items


def test_ids_of_another_users_memory_are_not_found_and_untouched(registry, memory_tool, call):
    bob = MemoryTool(user_id="bob", manager=memory_tool.manager)
    bob_id = bob.execute("add", content="bob likes jazz", memory_type="semantic").data.memory.id
    for args in ({"action": "update", "memory_id": bob_id, "content": "hacked"},
                 {"action": "update", "memory_id": bob_id, "importance": 0.0},
                 {"action": "remove", "memory_id": bob_id}):
        r = call(registry, "memory", args)
        assert not r.ok and "no memory" in r.error and r.error_type == "NotFoundError"
    item = memory_tool.manager.get(bob_id, user_id="bob")
    assert item.content == "bob likes jazz" and item.importance == 0.5
    assert [h.event for h in memory_tool.manager.history(bob_id, user_id="bob")] == ["add"]
    search = call(registry, "memory", {"action": "search", "query": "bob likes jazz"})
    assert bob_id not in search.text()


def test_unexpected_exceptions_become_error_results(memory_tool, monkeypatch, caplog):
    def boom(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(memory_tool.manager, "stats", boom)
    r = memory_tool.execute("stats")
    assert not r.ok and r.code == "internal_error" and "disk on fire" not in r.text()
    assert "memory.stats failed" in caplog.text and "disk on fire" in caplog.text


def test_memory_types_choose_tiers(settings, fake_embedder):
    tool = MemoryTool(user_id="u", settings=settings, embedder=fake_embedder,
                      memory_types=["semantic", "perceptual"])
    try:
        assert [t.value for t in tool.manager.enabled] == ["semantic", "perceptual"]
        r = tool.execute("add", content="a cat on a sofa", memory_type="perceptual", file_path="cat.jpg")
        assert r.ok and tool.manager.get(r.data.memory.id).modality.value == "image"
        assert not tool.execute("add", content="x", memory_type="working").ok
    finally:
        tool.close()
    with pytest.raises(InvalidInputError):
        MemoryTool(memory_types=["dreams"], settings=settings, embedder=fake_embedder)


def test_injected_manager_is_shared_not_closed(settings, fake_embedder):
    mm = MemoryManager(settings, user_id="carol", embedder=fake_embedder)
    tool = MemoryTool(manager=mm)
    assert tool.user_id == "carol" and tool.memory_types == ["working", "episodic", "semantic"]
    tool.close()
    assert mm.stats().total == 0  # still open
    mm.close()


def test_auto_record_conversation_rule(memory_tool):
    short = memory_tool.auto_record_conversation("你好", "你好！有什么可以帮你？")
    assert [v.memory_type for v in short] == ["working"]
    assert short[0].content == "User: 你好\nAssistant: 你好！有什么可以帮你？"
    long_user = "请详细解释一下检索增强生成的原理以及它和微调的区别，" * 3
    assert len(long_user) >= EPISODIC_MIN_TOKENS
    both = memory_tool.auto_record_conversation(long_user, "RAG 先检索再生成。")
    assert [v.memory_type for v in both] == ["working", "episodic"]
    assert both[1].event_type == "conversation" and both[1].session_id == memory_tool.session_id
    assert memory_tool.auto_record_conversation("   ", "x") == []


def test_get_context_for_query_renders_quoted_evidence(memory_tool):
    memory_tool.execute("add", content="用户喜欢绿茶", memory_type="semantic", importance=0.8)
    text = memory_tool.get_context_for_query("用户喜欢喝什么？", budget_tokens=200)
    assert text.startswith("<memory_evidence>") and '"用户喜欢绿茶"' in text
    assert memory_tool.get_context_for_query("") == ""
    block = memory_tool.context_block("绿茶")
    assert block.position == "user" and block.messages()[0]["role"] == "user"


def test_expanded_action_functions(memory_tool, call):
    reg = ToolRegistry(expand_actions=True)
    reg.register(memory_tool)
    names = [t["function"]["name"] for t in reg.to_openai_tools()]
    assert names[:2] == ["memory_add", "memory_search"] and "memory_clear_all" in names
    r = call(reg, "memory_add", {"content": "我叫张三"})
    assert r.ok and r.action == "add"
    r = call(reg, "memory_search", {"query": "张三"})
    assert r.ok and r.data.hits
    r = call(reg, "memory_search", {"action": "add", "query": "张三"})
    assert not r.ok and "ask for action 'add'" in r.error


# -- only what cleared the relevance floor reaches the model (issue 35 §1) --------------------------------
FLOOR_LIFE = ["Alex was born on 3 May 2015", "My dentist appointment is on Friday at 3pm",
              "We adopted a puppy called Oscar from the shelter", "I turned 30 that spring"]


@pytest.fixture
def floored_tool(tmp_path):
    """A tool whose floor is decided by words (the fake embedder's cosines mean nothing)."""
    tool = MemoryTool(user_id="alice", settings=Settings(home=tmp_path / "floored", floor_cosine=0.99),
                      embedder=DeterministicFakeEmbedder(32))
    for text in FLOOR_LIFE:
        tool.execute("add", content=text, memory_type="episodic")
    yield tool
    tool.close()


def test_search_results_hold_only_memories_that_cleared_the_floor(floored_tool):
    assert len(floored_tool.manager.search("When was Alex born?", user_id="alice")) == len(FLOOR_LIFE)
    r = floored_tool.execute("search", query="When was Alex born?", limit=10)
    assert r.ok and [h.content for h in r.data.hits] == [FLOOR_LIFE[0]]
    assert not any(t in r.text() for t in FLOOR_LIFE[1:])


def test_context_block_holds_only_memories_that_cleared_the_floor(floored_tool):
    block = floored_tool.context_block("When was Alex born?", budget_tokens=2000)
    assert [h.item.content for h in block.hits] == [FLOOR_LIFE[0]]
    text = floored_tool.get_context_for_query("When was Alex born?", budget_tokens=2000)
    assert FLOOR_LIFE[0] in text and not any(t in text for t in FLOOR_LIFE[1:])
