"""A conversation added through the service: ``RemoteMemory.add(messages)``, the raw HTTP body, and two keys.

Bob, holding his own key, tries what the ids of alice's turns used to allow: to learn whether she
said a text (a 409 for the id her turn would get) and to block her (taking that id first). Every
attempt answers exactly as for a text nobody said, and alice's adds always succeed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from service_runner import KEYS

from hello_memory.api import MemoryAPI
from hello_memory.client.remote import RemoteMemory
from hello_memory.testing.conversation_api import CHAT, T0, ConversationContract, legacy_turn_id
from hello_memory.testing.conversation_resend import LibraryEntry, ResendContract


class TestConversationsThroughTheService(ConversationContract):
    @pytest.fixture
    def memory(self, service, fresh_user: str) -> Iterator[MemoryAPI]:
        with RemoteMemory(service.url, user_id=fresh_user) as mm:
            yield mm


class TestResendThroughTheService(ResendContract):
    @pytest.fixture
    def chat(self, service, fresh_user: str) -> Iterator[LibraryEntry]:
        with RemoteMemory(service.url, user_id=fresh_user) as mm:
            yield LibraryEntry(mm)


class ShadowedEntry(LibraryEntry):
    """alice, with her key; before each of her sends, bob (his key) sends the same messages to a
    session of the same name: with guessable ids his turns took hers and her adds failed."""

    def __init__(self, alice: RemoteMemory, bob: RemoteMemory, prefix: str) -> None:
        super().__init__(alice, prefix)
        self.bob = bob

    def send(self, messages, *, session_id: str) -> list[str]:
        mine = self.bob.add(list(messages), session_id=self.session(session_id))
        theirs = super().send(messages, session_id=session_id)
        assert not {t.id for t in mine} & set(theirs)
        return theirs


class TestResendWithTwoKeys(ResendContract):
    @pytest.fixture
    def chat(self, keyed_service) -> Iterator[ShadowedEntry]:
        with RemoteMemory(keyed_service.url, api_key=KEYS["alice"]) as alice, \
                RemoteMemory(keyed_service.url, api_key=KEYS["bob"]) as bob:
            yield ShadowedEntry(alice, bob, f"{uuid.uuid4().hex[:8]}-")


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
        assert set(spec["ChatMessage"]["properties"]) == {"role", "content", "name", "id", "created_at", "memory_id"}


def _keyed(service, user: str) -> httpx.Client:
    return httpx.Client(base_url=service.url, timeout=60, headers={"Authorization": f"Bearer {KEYS[user]}"})


def _answer(response: httpx.Response) -> tuple[int, frozenset[str]]:
    """What an answer says besides the echo of the request: its status and the keys of its body."""
    body = response.json()
    return response.status_code, frozenset(body if isinstance(body, dict) else body[0])


def test_bob_cannot_learn_what_alice_said_nor_block_her(keyed_service) -> None:
    session, said = "chat-1", {"role": "user", "content": "I am pregnant"}
    unsaid = {"role": "user", "content": "I am not pregnant"}
    with _keyed(keyed_service, "alice") as alice, _keyed(keyed_service, "bob") as bob:
        first = alice.post("/v1/memories", json={"content": [said], "session_id": session})
        assert first.status_code == 201
        # The oracle: an add naming the id her turn would have got. Said or not, the same answer.
        probes = [bob.post("/v1/memories", json={"content": "probe",
                                                 "memory_id": legacy_turn_id("alice", session, m)})
                  for m in (said, unsaid)]
        assert [_answer(p) for p in probes] == [(201, _answer(probes[0])[1])] * 2
        # The conversation form of the same probe (bob's own turn of alice's text): a turn of bob's own.
        mine = bob.post("/v1/memories", json={"content": [said], "session_id": session})
        assert mine.status_code == 201 and mine.json()[0]["id"] != first.json()[0]["id"]
        # Blocking: bob took every id he can compute for her next messages first; she is not blocked.
        nxt = {"role": "user", "content": "and it is a girl"}
        for n in (1, 2):
            guess = legacy_turn_id("alice", session, nxt, n)
            taken = bob.post("/v1/memories", json={"content": "mine", "memory_id": guess})
            assert taken.status_code == 201
        again = alice.post("/v1/memories", json={"content": [said, nxt, nxt], "session_id": session})
        assert again.status_code == 201, again.text
        assert [t["content"] for t in again.json()] == [said["content"], nxt["content"], nxt["content"]]
        assert again.json()[0]["id"] == first.json()[0]["id"]
        # Her removal sticks through the service too; bob's identical session is untouched.
        assert alice.delete(f"/v1/memories/{first.json()[0]['id']}").status_code in (200, 204)
        assert alice.post("/v1/memories", json={"content": [said, nxt, nxt], "session_id": session}).json() == \
            again.json()[1:]
        assert bob.get(f"/v1/memories/{mine.json()[0]['id']}").json()["content"] == said["content"]
