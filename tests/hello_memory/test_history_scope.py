"""``history`` answers like ``get``: an id the user does not hold is ``NotFoundError``, never ``[]``.

Issue 27 §4: ``history`` of another user's memory id (or of an id nobody stored) returned ``[]``
where ``get`` raised ``NotFoundError``, so a caller could not tell "no changes" from "not yours".
``remove`` deletes a memory with its history, by design: afterwards the id is unknown like any
other. A forgotten memory (soft delete, restorable) keeps its history until it is purged.
"""

from __future__ import annotations

import uuid

import pytest

from hello_memory.errors import NotFoundError


def test_history_of_an_id_the_user_does_not_hold_is_not_found(manager):
    mine = manager.add("Alice likes green tea", memory_type="semantic")
    bobs = manager.add("Bob likes coffee", memory_type="semantic", user_id="bob")
    assert [h.event for h in manager.history(mine.id)] == ["add"]
    for memory_id, user in ((bobs.id, "alice"), (mine.id, "bob"), (str(uuid.uuid4()), "alice")):
        with pytest.raises(NotFoundError) as err:
            manager.history(memory_id, user_id=user)
        assert err.value.object_id == memory_id
        with pytest.raises(NotFoundError):
            manager.get(memory_id, user_id=user, include_deleted=True)
    assert [h.event for h in manager.history(bobs.id, user_id="bob")] == ["add"]


def test_a_removed_memory_has_no_history_and_a_forgotten_one_keeps_it(manager):
    kept = manager.add("to be forgotten", memory_type="episodic", importance=0.05)
    gone = manager.add("to be removed", memory_type="episodic", importance=0.9)
    manager.update(gone.id, content="to be removed, changed")
    manager.remove(gone.id)
    with pytest.raises(NotFoundError):
        manager.history(gone.id)
    manager.forget("importance_based", threshold=0.1)
    assert [h.event for h in manager.history(kept.id)] == ["add", "forget"]
    manager.remove(kept.id)
    with pytest.raises(NotFoundError):
        manager.history(kept.id)
