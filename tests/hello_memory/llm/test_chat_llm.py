"""ChatLLM, the shared front of the LLM clients: complete() packs its arguments into a ChatRequest."""

from __future__ import annotations

from hello_memory.llm.base import ChatLLM, ChatRequest, LLMClient, LLMResponse


class Recording(ChatLLM):
    name = "recording"

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    def _complete(self, request: ChatRequest) -> LLMResponse:
        self.requests.append(request)
        return LLMResponse(content="ok", model=self.name)


def test_complete_hands_fresh_lists_and_the_defaults_to_complete():
    llm = Recording()
    assert isinstance(llm, LLMClient)
    messages = ({"role": "user", "content": "hi"},)
    tools = ({"type": "function", "function": {"name": "f"}},)
    assert llm.complete(messages).content == "ok"
    llm.complete(messages, tools=tools, temperature=0.0, max_tokens=5)
    first, second = llm.requests
    assert first == ChatRequest(list(messages), None, 0.2, None)
    assert second == ChatRequest(list(messages), list(tools), 0.0, 5)
    assert isinstance(second.messages, list) and second.messages[0] is messages[0]
