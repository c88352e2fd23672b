"""Contract of a record store's conversation ledger (:class:`~hello_memory.stores.records.ledger.TurnLedger`).

Part of :class:`~hello_memory.testing.record_store.RecordStoreContract` (same ``stores`` fixture); a
record store that keeps no ledger skips it (``add(messages)`` then refuses conversations).
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from hello_memory.stores.records.base import RecordWrite
from hello_memory.stores.records.ledger import Tombstone, TurnLedger
from hello_memory.testing.record_data import ALICE, BOB, Factory, memory


def _ledger(store: Any) -> TurnLedger:
    if not isinstance(store, TurnLedger):
        pytest.skip(f"{type(store).__name__} keeps no conversation ledger")
    return store


class TurnLedgerContract:
    """The key and the tombstones, shared by every worker and scoped by user and session."""

    persistent: ClassVar[bool] = False

    def reopen(self, store: Any) -> Any:
        """Close ``store`` and open its data again (``RecordStoreContract.reopen``)."""
        raise NotImplementedError

    def test_the_key_is_random_and_one_for_every_worker(self, stores: Factory) -> None:
        first, second = _ledger(stores()), _ledger(stores())
        key = first.turn_key()
        assert len(key) == 32 and second.turn_key() == key
        assert _ledger(stores(name="elsewhere")).turn_key() != key
        if self.persistent:
            assert _ledger(self.reopen(first)).turn_key() == key

    def test_tombstones_are_kept_per_user_and_session_one_per_mark(self, stores: Factory) -> None:
        store = _ledger(stores())
        late, early = Tombstone("s", "m2", "d2", 20.0), Tombstone("s", "m1", "d1", 10.0)
        store.bury(ALICE, [late, early, Tombstone("t", "m3", "d3", 5.0)])
        store.bury(BOB, [Tombstone("s", "m9", "d9", 1.0)])
        assert store.tombstones(ALICE, "s") == [early, late]
        store.bury(ALICE, [Tombstone("s", "m2", "d2-edited", 20.0)])  # the same mark: replaced
        assert store.tombstones(ALICE, "s") == [early, Tombstone("s", "m2", "d2-edited", 20.0)]
        assert _ledger(stores()).tombstones(ALICE, "t") == [Tombstone("t", "m3", "d3", 5.0)]  # another worker
        assert store.tombstones(BOB, "s") == [Tombstone("s", "m9", "d9", 1.0)] and store.tombstones(BOB, "t") == []

    def test_forget_user_deletes_the_users_tombstones(self, stores: Factory) -> None:
        store: Any = _ledger(stores())
        store.apply([RecordWrite(memory("a note"))])
        store.bury(ALICE, [Tombstone("s", "m1", "d1", 1.0)])
        store.bury(BOB, [Tombstone("s", "m2", "d2", 1.0)])
        counts = store.forget_user(ALICE)
        assert counts["tombstones"] == 1 and store.tombstones(ALICE, "s") == []
        assert all(v == 0 for v in store.residue(ALICE).values())
        assert store.tombstones(BOB, "s") == [Tombstone("s", "m2", "d2", 1.0)]
