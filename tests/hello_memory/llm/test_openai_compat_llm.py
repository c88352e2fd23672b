"""OpenAICompatibleLLM against httpx.MockTransport injected through openai.OpenAI(http_client=...)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import httpx
import pytest

openai = pytest.importorskip("openai", reason="openai not installed (pip install 'hello-memory[openai]')")

from hello_memory.errors import LLMError, MissingDependencyError  # noqa: E402
from hello_memory.llm.base import LLMClient, LLMResponse, ToolCall  # noqa: E402
from hello_memory.llm.openai_compat import DASHSCOPE_BASE_URL, OpenAICompatibleLLM  # noqa: E402

USER = [{"role": "user", "content": "你好"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_memory",
            "description": "Search the user's memories.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    }
]


def completion(message: dict, *, finish_reason: str = "stop", model: str = "qwen-plus") -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", **message}}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


class Server:
    def __init__(self, handler: Callable[[httpx.Request], httpx.Response]) -> None:
        self.handler = handler
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.handler(request)

    @property
    def bodies(self) -> list[dict]:
        return [json.loads(r.content) for r in self.requests]


def llm_for(server: Server, model: str = "qwen-plus") -> OpenAICompatibleLLM:
    client = openai.OpenAI(
        api_key="sk-test",
        base_url=DASHSCOPE_BASE_URL,
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(server)),
    )
    return OpenAICompatibleLLM(model, client=client)


def test_is_an_llm_client_and_lazy():
    llm = OpenAICompatibleLLM("qwen-plus", base_url=DASHSCOPE_BASE_URL, api_key="k")
    assert isinstance(llm, LLMClient)
    assert llm.name == "openai-compatible:qwen-plus"
    assert llm._client is None


def test_content_and_request_fields():
    server = Server(lambda r: httpx.Response(200, json=completion({"content": "你好！有什么可以帮你？"})))
    resp = llm_for(server).complete(USER, temperature=0.0, max_tokens=64)
    assert resp == LLMResponse(content="你好！有什么可以帮你？", model="qwen-plus")
    req = server.requests[0]
    assert str(req.url) == DASHSCOPE_BASE_URL + "/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert server.bodies[0] == {"model": "qwen-plus", "messages": USER, "temperature": 0.0, "max_tokens": 64}


def test_tool_calls_are_parsed_and_tools_sent():
    msg = {
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "search_memory", "arguments": '{"query": "猫"}'},
            },
            {"id": "call_b", "type": "function", "function": {"name": "search_memory", "arguments": ""}},
        ],
    }
    server = Server(lambda r: httpx.Response(200, json=completion(msg, finish_reason="tool_calls")))
    resp = llm_for(server).complete(USER, tools=TOOLS)
    assert resp.content == ""
    assert resp.tool_calls == [
        ToolCall(id="call_a", name="search_memory", arguments='{"query": "猫"}'),
        ToolCall(id="call_b", name="search_memory", arguments="{}"),
    ]
    assert server.bodies[0]["tools"] == TOOLS


def test_api_error_becomes_llm_error_with_provider_message():
    err = {
        "error": {"message": "Model not exist.", "type": "invalid_request_error", "code": "model_not_found"}
    }
    server = Server(lambda r: httpx.Response(400, json=err))
    with pytest.raises(LLMError, match=r"HTTP 400: Model not exist\. \(model_not_found\)") as info:
        llm_for(server, model="qwen-nope").complete(USER)
    assert isinstance(info.value.__cause__, openai.BadRequestError)


def test_server_and_connection_errors_become_llm_errors():
    with pytest.raises(LLMError, match="HTTP 500"):
        llm_for(Server(lambda r: httpx.Response(500, text="oops"))).complete(USER)

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(LLMError, match="APIConnectionError"):
        llm_for(Server(down)).complete(USER)


def test_empty_reply_and_no_choices_are_errors_not_empty_responses():
    server = Server(lambda r: httpx.Response(200, json=completion({"content": ""}, finish_reason="length")))
    with pytest.raises(LLMError, match=r"empty reply.*length"):
        llm_for(server).complete(USER)
    no_choices = {**completion({"content": "x"}), "choices": []}
    with pytest.raises(LLMError, match="no choices"):
        llm_for(Server(lambda r: httpx.Response(200, json=no_choices))).complete(USER)


def test_built_client_uses_settings_and_placeholder_key():
    llm = OpenAICompatibleLLM("llama3", base_url="http://127.0.0.1:11434/v1", timeout=5, max_retries=1)
    sdk = llm._sdk()
    assert sdk.api_key == "not-needed" and str(sdk.base_url).startswith("http://127.0.0.1:11434/v1")
    assert sdk.max_retries == 1
    llm.close()
    assert llm._client is None


def test_missing_openai_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingDependencyError, match=r"hello-memory\[openai\]"):
        OpenAICompatibleLLM("m", api_key="k").complete(USER)
