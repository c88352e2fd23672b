"""The conversation ledger of the SQLite record store (:mod:`hello_memory.stores.records.ledger`).

The key is a row of ``meta`` (created by the first caller, ``INSERT OR IGNORE``: every later one
reads the same); tombstones are rows of ``turn_tombstones``, one per removed turn.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from hello_memory.stores.records.ledger import KEY_BYTES, Tombstone
from hello_memory.stores.sqlite_base import SQLiteDatabase

SCHEMA = """
CREATE TABLE IF NOT EXISTS turn_tombstones (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, mark TEXT NOT NULL, digest TEXT NOT NULL,
    at REAL NOT NULL, PRIMARY KEY (user_id, session_id, mark)
);
"""
_KEY = "turn_key"


class SQLiteTurnLedger(SQLiteDatabase):
    """The ledger half of :class:`~hello_memory.stores.records.sqlite.SQLiteRecordStore`."""

    _turn_key: bytes | None = None

    def turn_key(self) -> bytes:
        """The store's random key (``meta``), created by the first caller."""
        if self._turn_key is None:
            with self.transaction() as conn:
                conn.execute(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (_KEY, secrets.token_hex(KEY_BYTES))
                )
                value = conn.execute("SELECT value FROM meta WHERE key=?", (_KEY,)).fetchone()[0]
            self._turn_key = bytes.fromhex(value)
        return self._turn_key

    def tombstones(self, user_id: str, session_id: str) -> list[Tombstone]:
        """The tombstones of the user's session, oldest first."""
        rows = self.query(
            "SELECT session_id, mark, digest, at FROM turn_tombstones WHERE user_id=? AND session_id=? "
            "ORDER BY at, rowid",
            (user_id, session_id),
        )
        return [Tombstone(r[0], r[1], r[2], float(r[3])) for r in rows]

    def bury(self, user_id: str, tombstones: Sequence[Tombstone]) -> None:
        """Keep ``tombstones`` for the user (a mark kept already is replaced: one tombstone per mark)."""
        if not tombstones:
            return
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO turn_tombstones(user_id, session_id, mark, digest, at) VALUES (?,?,?,?,?)",
                [(user_id, t.session_id, t.mark, t.digest, t.at) for t in tombstones],
            )

    def forget_tombstones(self, user_id: str) -> int:
        """Delete the user's tombstones; returns how many."""
        with self.transaction() as conn:
            return int(conn.execute("DELETE FROM turn_tombstones WHERE user_id=?", (user_id,)).rowcount)

    def count_tombstones(self, user_id: str) -> int:
        """How many tombstones the user has."""
        return int(self.query("SELECT COUNT(*) FROM turn_tombstones WHERE user_id=?", (user_id,))[0][0])
