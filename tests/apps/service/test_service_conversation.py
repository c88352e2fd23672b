"""A conversation added through the service: ``RemoteMemory.add(messages)`` and the raw HTTP body."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from hello_memory.api import MemoryAPI
from hello_memory.client.remote import RemoteMemory
from hello_memory.testing.conversation_api import CHAT, T0, ConversationContract


class TestConversationsThroughTheService(ConversationContract):
    @pytest.fixture
    def memory(self, service, fresh_user: str) -> Iterator[MemoryAPI]:
        with RemoteMemory(service.url, user_id=fresh_user) as mm:
            yield mm


def test_post_memories_takes_chat_messages_and_answers_the_turns(service, fresh_user: str) -> None:
    body = {"content": [{**CHAT[0], "created_at": T0.isoformat()}, CHAT[1]], "session_id": "trip",
            "user_id": fresh_user}
    with httpx.Client(base_url=service.url, timeout=60) as client:
        first = client.post("/v1/memories", json=body)
        again = client.post("/v1/memories", json=body)
        assert first.status_code == again.status_code == 201
        turns = first.json()
        assert [t["participants"] for t in turns] == [["Caroline"], ["assistant"]]
        assert [t["id"] for t in again.json()] == [t["id"] for t in turns]
        bad = client.post("/v1/memories", json={**body, "content": [{**CHAT[0], "tool_calls": []}]})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_input"
        batch = client.post("/v1/memories/batch", json={"items": [{"content": CHAT, "session_id": "x"}]})
        assert batch.status_code == 422  # add_many takes texts, as in process
        spec = client.get("/openapi.json").json()["components"]["schemas"]
        assert set(spec["ChatMessage"]["properties"]) == {"role", "content", "name", "created_at", "memory_id"}
