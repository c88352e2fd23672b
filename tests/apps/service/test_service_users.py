"""Users, their knowledge bases and deleting them, through a real keyed service (issue 27 §4).

- ``DELETE /v1/users/{user}`` (``forget_user``) deletes the user's default knowledge base
  ``docs_<user>`` with their memories — documents, chunks, the client's source paths — and leaves
  namespaces a key was granted explicitly (shared by design), and every other user's;
- user ids never share a default namespace: the key of user ``docs_bob`` does not reach bob's
  ``docs_bob``, and forgetting user ``docs_bob`` leaves bob's knowledge base alone;
- ``history`` of a memory id the key's user does not hold is 404, as ``get`` is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from service_runner import RunningService, start_service

from hello_memory.client.remote import RemoteMemory
from hello_memory.errors import NotFoundError, PermissionDeniedError
from rag.remote import RemoteRAG

KEYS = {"bob": "k-bob-0123456789", "docs_bob": "k-docsbob-0123456789", "carol": "k-carol-0123456789",
        "admin": "k-admin-0123456789"}
MARK = "zebra-quartz-{}"  # a word no other document holds, to find its bytes in the files


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    root = tmp_path_factory.mktemp("users")
    keys = root / "keys.json"
    keys.write_text(json.dumps({"keys": [
        {"key": KEYS["bob"], "user_id": "bob"},
        {"key": KEYS["docs_bob"], "user_id": "docs_bob"},
        {"key": KEYS["carol"], "user_id": "carol", "namespaces": ["team_docs", "docs_carol"]},
        {"key": KEYS["admin"], "user_id": "ops", "admin": True},
    ]}), encoding="utf-8")
    running = start_service(root / "data", args=("--keys-file", str(keys)))
    yield running
    assert running.stop() == 0, running.output()


def _memory(svc: RunningService, who: str) -> RemoteMemory:
    return RemoteMemory(svc.url, api_key=KEYS[who])


def _kb(svc: RunningService, who: str, namespace: str) -> RemoteRAG:
    return RemoteRAG(svc.url, namespace=namespace, api_key=KEYS[who])


def _stored_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.glob("rag.db*")))


def test_a_user_named_like_another_users_knowledge_base_does_not_reach_it(svc):
    with _memory(svc, "docs_bob") as mallory, _kb(svc, "bob", "docs_bob") as bobs:
        assert mallory.identity().namespaces == ["docs_docs_bob"]
        bobs.add_text(f"# Bob\n\nbob's private notes {MARK.format('collide')}", document_id="bob-notes")
        with _kb(svc, "docs_bob", "docs_bob") as theirs:
            for call in (theirs.list_documents, theirs.stats, theirs.clear, lambda: theirs.search("private")):
                with pytest.raises(PermissionDeniedError):
                    call()
        with _kb(svc, "docs_bob", "docs_docs_bob") as own:
            assert own.add_text("# Mine\n\nmallory's own notes").chunks == 1
        with _memory(svc, "admin") as admin:
            counts = admin.forget_user("docs_bob")  # the user docs_bob: its knowledge base, not bob's
        assert counts["knowledge_base:documents"] == 1
        assert [d.document_id for d in bobs.list_documents()] == ["bob-notes"]


def test_forget_user_deletes_the_default_knowledge_base_with_the_memories(svc, tmp_path):
    upload = tmp_path / "bob-private-folder" / "diary.md"
    upload.parent.mkdir()
    upload.write_text(f"# Diary\n\nbob's diary {MARK.format('diary')}\n", encoding="utf-8")
    with _memory(svc, "bob") as bob, _kb(svc, "bob", "docs_bob") as kb:
        bob.add("bob likes green tea", memory_type="semantic")
        kb.add_document(upload)
        kb.add_text(f"# Notes\n\n{MARK.format('notes')}", document_id="notes")
        assert str(upload.resolve()).encode() in _stored_bytes(svc.home)
        counts = bob.forget_user("bob")  # a key may forget its own user
        assert counts["records:memories"] == 1
        assert counts["knowledge_base:documents"] >= 2 and counts["knowledge_base:chunks"] >= 2
        assert kb.list_documents() == [] and kb.stats().chunks == 0 and bob.get_all() == []
        assert kb.search("diary").hits == []
    stored = _stored_bytes(svc.home)
    for gone in (MARK.format("diary"), MARK.format("notes"), MARK.format("collide"), str(upload.resolve())):
        assert gone.encode() not in stored, gone


def test_forget_user_leaves_namespaces_granted_explicitly(svc):
    with _memory(svc, "carol") as carol, _kb(svc, "carol", "team_docs") as team, \
            _kb(svc, "carol", "docs_carol") as own:
        team.add_text("# Team\n\nthe team's shared runbook", document_id="runbook")
        own.add_text("# Carol\n\ncarol's own notes", document_id="carol-notes")
        counts = carol.forget_user("carol")
        assert counts["knowledge_base:documents"] == 1
        assert own.list_documents() == []
        assert [d.document_id for d in team.list_documents()] == ["runbook"]


def test_forget_user_of_another_user_needs_the_admin_key(svc):
    with _memory(svc, "docs_bob") as mallory, pytest.raises(PermissionDeniedError):
        mallory.forget_user("bob")


def test_history_of_a_memory_the_key_does_not_hold_is_404(svc):
    with _memory(svc, "bob") as bob, _memory(svc, "docs_bob") as mallory:
        item = bob.add("bob's appointment at nine", memory_type="episodic")
        with pytest.raises(NotFoundError):
            mallory.history(item.id)
        response = httpx.get(f"{svc.url}/v1/memories/{item.id}/history",
                             headers={"Authorization": f"Bearer {KEYS['docs_bob']}"})
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
        assert [h.event for h in bob.history(item.id)] == ["add"]
        bob.remove(item.id)
        with pytest.raises(NotFoundError):
            bob.history(item.id)
