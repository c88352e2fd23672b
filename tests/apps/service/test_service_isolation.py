"""Key A never reads, changes, deletes or exports user B's data, whatever ids or user ids it sends.

A Hypothesis state machine drives two users' keys (and an admin key, for the checks) against one
real service: both users add memories and documents, and each keeps trying to reach the other's
through every endpoint. After every step, what the admin sees of each user equals that user's
model; a key's own reads never contain the other's text.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from service_runner import KEYS

from hello_memory.client.remote import RemoteMemory
from hello_memory.errors import InvalidInputError, NotFoundError, PermissionDeniedError
from rag.remote import RemoteRAG

USERS = ("alice", "bob")
OWN_NS = {"alice": "docs_alice", "bob": "bob"}  # alice: the default; bob: granted explicitly
TIERS = ("working", "episodic", "semantic")
TRICK_IDS = ["../users/bob", "../users/alice", "%2e%2e", "*", "' OR 1=1 --", "", " ", str(uuid.uuid4())]
words = st.text(alphabet="abcdefghij 张三李四", min_size=1, max_size=20).filter(lambda s: s.strip())


class ServiceIsolation(RuleBasedStateMachine):
    """Two keyed users on one service; the admin empties both at each example's start."""

    url: str

    @initialize()
    def connect(self) -> None:
        self.mem = {u: RemoteMemory(self.url, api_key=KEYS[u]) for u in USERS}
        self.admin = RemoteMemory(self.url, api_key=KEYS["admin"])
        self.kb = {u: RemoteRAG(self.url, namespace=OWN_NS[u], api_key=KEYS[u]) for u in USERS}
        self.admin_kb = {u: RemoteRAG(self.url, namespace=OWN_NS[u], api_key=KEYS["admin"]) for u in USERS}
        for user in USERS:  # every example starts empty (draws must not depend on earlier examples)
            self.admin.forget_user(user)
            self.admin_kb[user].clear()
        self.model: dict[str, dict[str, str]] = {u: {} for u in USERS}
        self.docs: dict[str, set[str]] = {u: set() for u in USERS}

    def teardown(self) -> None:
        for client in [*getattr(self, "mem", {}).values(), *getattr(self, "kb", {}).values(),
                       *getattr(self, "admin_kb", {}).values()]:
            client.close()
        if hasattr(self, "admin"):
            self.admin.close()

    def _victim_ids(self, victim: str) -> list[str]:
        return [*self.model[victim], *TRICK_IDS]

    # -- normal work ----------------------------------------------------------------------------
    @rule(user=st.sampled_from(USERS), text=words, tier=st.sampled_from(TIERS))
    def add(self, user: str, text: str, tier: str) -> None:
        item = self.mem[user].add(f"{user} {text}", memory_type=tier, importance=0.8)
        assert item.user_id == user
        self.model[user][item.id] = item.content

    @rule(user=st.sampled_from(USERS), text=words)
    def add_document(self, user: str, text: str) -> None:
        report = self.kb[user].add_text(f"# {user}\n\n{user} document {text}",
                                        document_id=f"doc-{uuid.uuid4().hex[:8]}")
        self.docs[user].add(report.document_id)

    @rule(user=st.sampled_from(USERS), data=st.data())
    def remove_own(self, user: str, data: st.DataObject) -> None:
        if self.model[user]:
            victim = data.draw(st.sampled_from(sorted(self.model[user])))
            self.mem[user].remove(victim)
            del self.model[user][victim]

    # -- attacks --------------------------------------------------------------------------------
    @rule(attacker=st.sampled_from(USERS), data=st.data())
    def touch_the_others_memory(self, attacker: str, data: st.DataObject) -> None:
        victim = "bob" if attacker == "alice" else "alice"
        target = data.draw(st.sampled_from(self._victim_ids(victim)))
        mm = self.mem[attacker]
        for call in (lambda: mm.get(target), lambda: mm.get(target, include_deleted=True),
                     lambda: mm.update(target, content="pwned"), lambda: mm.update(target, importance=0.0),
                     lambda: mm.remove(target), lambda: mm.restore(target)):
            with pytest.raises((NotFoundError, PermissionDeniedError, ValueError)):
                call()
        with pytest.raises(NotFoundError if target.strip() else InvalidInputError):
            mm.history(target)
        if not target.strip():
            return
        for call in (lambda: mm.get(target, user_id=victim), lambda: mm.update(target, content="x", user_id=victim),
                     lambda: mm.remove(target, user_id=victim), lambda: mm.restore(target, user_id=victim),
                     lambda: mm.history(target, user_id=victim)):
            with pytest.raises(PermissionDeniedError):
                call()

    @rule(attacker=st.sampled_from(USERS))
    def act_as_the_other_user(self, attacker: str) -> None:
        victim = "bob" if attacker == "alice" else "alice"
        mm = self.mem[attacker]
        for call in (lambda: mm.get_all(user_id=victim), lambda: mm.search("document", user_id=victim),
                     lambda: mm.build_context("x", user_id=victim), lambda: mm.stats(user_id=victim),
                     lambda: mm.summary(user_id=victim), lambda: mm.forget(threshold=1.0, user_id=victim),
                     lambda: mm.consolidate(user_id=victim), lambda: mm.clear_all(victim),
                     lambda: mm.forget_user(victim), lambda: mm.all_stats(),
                     lambda: mm.add("planted", user_id=victim),
                     lambda: mm.add_many([{"content": "mine"}, {"content": "planted", "user_id": victim}])):
            with pytest.raises(PermissionDeniedError):
                call()

    @rule(attacker=st.sampled_from(USERS), data=st.data())
    def touch_the_others_documents(self, attacker: str, data: st.DataObject) -> None:
        victim = "bob" if attacker == "alice" else "alice"
        theirs = RemoteRAG(self.url, namespace=OWN_NS[victim], api_key=KEYS[attacker])
        try:
            for call in (theirs.list_documents, theirs.stats, theirs.clear, lambda: theirs.search("document"),
                         lambda: theirs.ask("what is in the document?"), lambda: theirs.add_text("planted"),
                         lambda: theirs.delete_document(next(iter(self.docs[victim]), "none"))):
                with pytest.raises(PermissionDeniedError):
                    call()
        finally:
            theirs.close()
        if self.docs[victim]:
            doc = data.draw(st.sampled_from(sorted(self.docs[victim])))
            with pytest.raises(NotFoundError):
                self.kb[attacker].delete_document(doc)  # the same id in its own namespace is not theirs

    @rule(attacker=st.sampled_from(USERS))
    def wipe_own_data_only(self, attacker: str) -> None:
        mm = self.mem[attacker]
        mm.forget("importance_based", threshold=0.9)  # soft: still in the model (include_deleted)
        if len(self.model[attacker]) > 12:
            assert mm.clear_all() == len(self.model[attacker])
            self.model[attacker] = {}

    # -- invariants -----------------------------------------------------------------------------
    @invariant()
    def each_user_holds_exactly_their_model(self) -> None:
        if not hasattr(self, "admin"):
            return
        for user in USERS:
            seen = {i.id: i.content for i in self.admin.get_all(user_id=user, include_deleted=True)}
            assert seen == self.model[user]
            assert {d.document_id for d in self.admin_kb[user].list_documents()} == self.docs[user]

    @invariant()
    def own_reads_never_show_the_other_user(self) -> None:
        if not hasattr(self, "admin"):
            return
        for user in USERS:
            other = "bob" if user == "alice" else "alice"
            mm = self.mem[user]
            texts = [i.content for i in mm.get_all(include_deleted=True)]
            texts += [h.item.content for h in mm.search(f"{other} document", limit=20)]
            texts += [h.item.content for h in mm.build_context(f"{other}", budget_tokens=2000).hits]
            texts += [h.text for h in self.kb[user].search(f"{other} document", limit=20).hits]
            assert not [t for t in texts if t.startswith(other) or f"{other} document" in t]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_key_never_reaches_another_users_data(keyed_service):
    ServiceIsolation.url = keyed_service.url
    runner = ServiceIsolation.TestCase
    # No shrinking phase: each step is several HTTP calls and a failure prints its steps anyway.
    runner.settings = settings(max_examples=8, stateful_step_count=15, deadline=None, derandomize=True,
                               suppress_health_check=list(HealthCheck),
                               phases=[Phase.explicit, Phase.reuse, Phase.generate])
    runner().runTest()


def test_requests_without_a_valid_key_are_401(keyed_service):
    for key in (None, "wrong-key-123456", f"{KEYS['alice']}x"):
        with RemoteMemory(keyed_service.url, api_key=key) as mm:
            with pytest.raises(PermissionDeniedError) as err:
                mm.stats()
            assert err.value.status == 401 and "API key" in str(err.value)


def test_the_admin_key_reaches_every_user_and_namespace(keyed_service):
    with RemoteMemory(keyed_service.url, api_key=KEYS["alice"]) as alice, \
            RemoteMemory(keyed_service.url, api_key=KEYS["admin"]) as admin:
        item = alice.add("alice's fact for the admin", memory_type="semantic")
        assert alice.user_id == "alice" and alice.identity().namespaces == ["docs_alice"]
        assert admin.get(item.id, user_id="alice") == item
        assert "alice" in {s.user_id for s in admin.all_stats()}
        assert admin.identity().admin and admin.identity().namespaces is None


def test_uploads_and_paths_into_another_users_knowledge_base_are_refused(keyed_service, tmp_path):
    doc = tmp_path / "planted.md"
    doc.write_text("# Planted\n\nnot yours", encoding="utf-8")
    with RemoteRAG(keyed_service.url, namespace="bob", api_key=KEYS["alice"]) as theirs:
        for call in (lambda: theirs.add_document(doc), lambda: theirs.add_server_document(str(doc))):
            with pytest.raises(PermissionDeniedError):
                call()
    with RemoteRAG(keyed_service.url, namespace="bob", api_key=KEYS["admin"]) as admin:
        assert "planted" not in " ".join(d.source_path or "" for d in admin.list_documents())
