"""The test kit's ScriptedLLM and FailingLLM."""

from __future__ import annotations

import threading

import pytest

from hello_memory.errors import LLMError
from hello_memory.llm.base import LLMClient, LLMResponse, ToolCall
from hello_memory.testing.fake_llm import FailingLLM, ScriptedLLM, last_user_text


def user(text: str) -> list[dict]:
    return [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]


def test_replies_in_order_then_raises():
    call = ToolCall(id="c1", name="search", arguments='{"q": "x"}')
    llm = ScriptedLLM(["one", LLMResponse(tool_calls=[call]), lambda msgs: f"echo {msgs[-1]['content']}"])
    assert isinstance(llm, LLMClient) and llm.name == "scripted"
    assert llm.complete(user("a")) == LLMResponse(content="one", model="scripted")
    assert llm.complete(user("b")).tool_calls == [call]
    assert llm.complete(user("c")).content == "echo c"
    assert llm.remaining == 0
    with pytest.raises(LLMError, match=r"script exhausted at call 4.*'d'"):
        llm.complete(user("d"))
    assert len(llm.calls) == 4


def test_default_after_the_script():
    llm = ScriptedLLM(["first"], default="fallback")
    assert [llm.complete(user(str(i))).content for i in range(3)] == ["first", "fallback", "fallback"]


def test_calls_record_copies_of_messages_and_tools():
    llm = ScriptedLLM(["ok"])
    msgs = user("original")
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    llm.complete(msgs, tools=tools, temperature=0.0, max_tokens=10)
    msgs[-1]["content"] = "mutated"
    tools[0]["function"]["name"] = "g"
    rec = llm.calls[0]
    assert rec.last_user_message == "original" and rec.messages[0]["role"] == "system"
    assert rec.tools is not None and rec.tools[0]["function"]["name"] == "f"
    assert (rec.temperature, rec.max_tokens) == (0.0, 10)


def test_by_rules_matches_last_user_message_and_reuses_rules():
    llm = ScriptedLLM.by_rules(
        [
            ("expand", "query one\nquery two"),
            (lambda t: t.startswith("hypothetical"), LLMResponse(content="a passage")),
            (lambda t: True, lambda msgs: f"len={len(msgs)}"),
        ]
    )
    assert llm.complete(user("please expand: cats")).content == "query one\nquery two"
    assert llm.complete(user("please expand: dogs")).content == "query one\nquery two"
    assert llm.complete(user("hypothetical answer for x")).content == "a passage"
    assert llm.complete(user("other")).content == "len=2"
    assert len(llm.calls) == 4 and llm.remaining == 0


def test_by_rules_without_match():
    llm = ScriptedLLM.by_rules([("expand", "x")])
    with pytest.raises(LLMError, match="no rule matched"):
        llm.complete(user("summarise"))
    assert ScriptedLLM.by_rules([("expand", "x")], default="d").complete(user("summarise")).content == "d"


def test_last_user_text_handles_parts_and_absence():
    parts = [
        {"role": "user", "content": [{"type": "text", "text": "看"}, {"type": "image_url"}, {"text": "图"}]}
    ]
    assert last_user_text(parts) == "看图"
    assert last_user_text([{"role": "system", "content": "s"}]) == ""


def test_concurrent_calls_each_get_one_reply():
    llm = ScriptedLLM([str(i) for i in range(50)])
    got: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(10):
            r = llm.complete(user("q")).content
            with lock:
                got.append(r)

    threads = [threading.Thread(target=work) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got, key=int) == [str(i) for i in range(50)]


def test_failing_llm():
    llm = FailingLLM("rate limited")
    assert isinstance(llm, LLMClient)
    with pytest.raises(LLMError, match="rate limited"):
        llm.complete(user("x"), tools=[])
    assert len(llm.calls) == 1 and llm.calls[0].last_user_message == "x"
