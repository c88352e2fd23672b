"""Remote adds are safe to retry: a reply lost after the commit never stores a memory twice.

A proxy in front of the real service passes every request on and loses the chosen reply; the
service is SIGKILLed after it committed; the client's own retries and the caller's retry of the
same call must all name the same memories.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from lossy_proxy import LossyProxy
from service_runner import KEYS, RunningService, start_service

from hello_memory.client.remote import RemoteMemory
from hello_memory.errors import (
    IdConflictError,
    InvalidInputError,
    NotFoundError,
    ServiceError,
    ServiceTimeoutError,
)

ADD, BATCH = "/v1/memories", "/v1/memories/batch"


@pytest.fixture
def proxy(service: RunningService) -> Iterator[LossyProxy]:
    lossy = LossyProxy(service.url)
    yield lossy
    lossy.close()


def _contents(mm: RemoteMemory) -> list[str]:
    return sorted(item.content for item in mm.get_all())


def test_a_reply_lost_after_the_commit_is_retried_and_stores_nothing_twice(proxy, fresh_user):
    proxy.drop("POST", ADD)
    with RemoteMemory(proxy.url, user_id=fresh_user) as mm:
        item = mm.add("Ana lives in Porto", memory_type="episodic")
        assert proxy.sent("POST", ADD) == 2 and proxy.count("POST", ADD) == 2  # committed, lost, sent again
        assert _contents(mm) == ["Ana lives in Porto"]
        assert mm.get(item.id).content == "Ana lives in Porto"


def test_the_callers_retry_after_a_lost_reply_reuses_the_id(proxy, fresh_user):
    proxy.drop("POST", ADD)
    with RemoteMemory(proxy.url, user_id=fresh_user, retries=0) as mm:
        with pytest.raises(ServiceError) as err:
            mm.add("Ana lives in Porto", memory_type="episodic")
        sent = err.value.memory_ids
        assert sent is not None and len(sent) == 1 and sent[0] in str(err.value)
        again = mm.add("Ana lives in Porto", memory_type="episodic")
        assert again.id == sent[0] and _contents(mm) == ["Ana lives in Porto"]
        mm.add("Ana lives in Porto", memory_type="episodic")  # after a success: a new memory, as in the library
        assert len(mm.get_all()) == 2


def test_the_callers_retry_after_a_timeout_stores_nothing_twice(proxy, fresh_user):
    proxy.hold("POST", ADD, seconds=4.0)
    with RemoteMemory(proxy.url, user_id=fresh_user, timeout=1.0) as mm:
        with pytest.raises(ServiceTimeoutError) as err:
            mm.add("the train leaves at 9", memory_type="semantic", importance=0.9)
        again = mm.add("the train leaves at 9", memory_type="semantic", importance=0.9)
        assert proxy.sent("POST", ADD) == 2  # the timed-out request was not repeated by the client
        assert [again.id] == err.value.memory_ids
        assert _contents(mm) == ["the train leaves at 9"]


def test_add_many_retried_after_a_lost_reply_stores_each_memory_once(proxy, fresh_user):
    batch = [{"content": f"fact {k}", "memory_type": "semantic"} for k in range(3)]
    proxy.drop("POST", BATCH)
    with RemoteMemory(proxy.url, user_id=fresh_user) as mm:
        items = mm.add_many(batch)
        assert proxy.sent("POST", BATCH) == 2
        assert [i.content for i in items] == ["fact 0", "fact 1", "fact 2"]
        assert _contents(mm) == ["fact 0", "fact 1", "fact 2"]
    proxy.drop("POST", BATCH)
    with RemoteMemory(proxy.url, user_id=fresh_user, retries=0) as mm:
        named = [*batch, {"content": "fact 3", "memory_type": "episodic", "memory_id": str(uuid.uuid4())}]
        with pytest.raises(ServiceError) as err:
            mm.add_many(named)
        assert err.value.memory_ids is not None and len(err.value.memory_ids) == 3  # the caller's id is its own
        again = mm.add_many(named)
        assert [i.id for i in again[:3]] == err.value.memory_ids and again[3].id == named[3]["memory_id"]
        assert len(mm.get_all()) == 7


def test_a_write_is_not_repeated_after_a_lost_reply_unless_it_is_idempotent(proxy, fresh_user):
    with RemoteMemory(proxy.url, user_id=fresh_user) as mm:
        item = mm.add("draft", memory_type="episodic")
        proxy.drop("PATCH", f"{ADD}/{item.id}")
        with pytest.raises(ServiceError):
            mm.update(item.id, content="final")
        assert proxy.sent("PATCH", f"{ADD}/{item.id}") == 1
        assert mm.get(item.id).content == "final"  # it happened once; the caller decides about a retry
        proxy.drop("POST", f"{ADD}/search")
        assert [h.item.id for h in mm.search("final", limit=5)] == [item.id]  # a search is repeated
        assert proxy.sent("POST", f"{ADD}/search") == 2


def test_service_killed_after_the_commit_then_the_retry_after_restart_stores_once(tmp_path):
    home = tmp_path / "data"
    running = start_service(home)
    proxy = LossyProxy(running.url)
    try:
        proxy.drop("POST", ADD, before=running.kill)  # SIGKILL once the add committed and answered
        with RemoteMemory(proxy.url, user_id="u1", timeout=10) as mm:
            with pytest.raises(ServiceError) as err:  # its own retries find the service gone (502)
                mm.add("the meeting moved to Tuesday", memory_type="episodic")
            assert err.value.status == 502 and proxy.count("POST", ADD) == 1
            running = start_service(home)
            proxy.upstream = running.url
            again = mm.add("the meeting moved to Tuesday", memory_type="episodic")
            assert [again.id] == err.value.memory_ids
            assert _contents(mm) == ["the meeting moved to Tuesday"]
    finally:
        proxy.close()
        running.stop()


def test_an_id_of_another_users_memory_is_a_conflict_that_reveals_nothing(keyed_service):
    url = keyed_service.url
    with RemoteMemory(url, api_key=KEYS["alice"]) as alice, RemoteMemory(url, api_key=KEYS["bob"]) as bob:
        mine = alice.add("alice's PIN is 4711", memory_type="semantic")
        for content in ("alice's PIN is 4711", "bob's note"):
            with pytest.raises(IdConflictError) as err:
                bob.add(content, memory_type="semantic", memory_id=mine.id)
            text = f"{err.value} {vars(err.value)}"
            assert "alice" not in text and "4711" not in text and err.value.memory_id == mine.id
            with pytest.raises(IdConflictError):
                bob.add_many([{"content": content, "memory_type": "semantic", "memory_id": mine.id}])
        with pytest.raises(NotFoundError):
            bob.get(mine.id)
        assert mine.id not in {m.id for m in bob.get_all()}
        assert alice.get(mine.id).content == mine.content


def test_arguments_json_cannot_sort_are_sent_as_in_process(service, fresh_user):
    with RemoteMemory(service.url, user_id=fresh_user) as mm:  # the call's fingerprint once sorted keys
        assert mm.add("mixed keys", metadata={1: "a", "b": 2}).metadata == {"1": "a", "b": 2}
        items = mm.add_many([{"content": "mixed", "metadata": {2: "x", "y": None}}])
        assert items[0].metadata == {"2": "x", "y": None}
        with pytest.raises(InvalidInputError, match="metadata"):
            mm.add("a set", metadata={"s": {1, 2}})
