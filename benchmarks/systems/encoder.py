"""multilingual-e5-small through hello-memory's ``E5Embedder`` (the product's default engine), with an
optional on-disk cache of embeddings: baselines and peers embed exactly as the product does.

The cache (SQLite, one row per ``sha1(kind + text)``) lets exploratory runs over the same data
skip re-embedding; it never changes a result, only the measured index time.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

DIM = 384
BATCH = 64


class E5Encoder:
    """Embeds queries and passages with e5 (384-d, L2-normalised).

    Example:
        >>> enc = E5Encoder()                                # doctest: +SKIP
        >>> enc.passages(["a cat", "a dog"]).shape           # doctest: +SKIP
        (2, 384)
    """

    def __init__(self, *, cache_dir: Path | None = None) -> None:
        self._model: Any = None
        self._cache_dir = cache_dir
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _e5(self) -> Any:
        if self._model is None:
            from hello_memory.embedders.e5 import E5Embedder

            self._model = E5Embedder()
        return self._model

    def _conn(self) -> sqlite3.Connection | None:
        if self._cache_dir is not None and self._db is None:
            self._cache_dir.mkdir(parents=True, exist_ok=True)
            engine = self._e5()._engine  # vectors differ in the 4th decimal between engines
            self._db = sqlite3.connect(self._cache_dir / f"e5-small-q4-{engine}.sqlite", check_same_thread=False)
            self._db.execute("CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, vec BLOB)")
        return self._db

    def _embed(self, texts: Sequence[str], kind: str) -> Vectors:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        keys = [hashlib.sha1(f"{kind}\0{t}".encode()).hexdigest() for t in texts]
        with self._lock:
            db = self._conn()
            cached = self._lookup(db, keys) if db else {}
            todo = [i for i, key in enumerate(keys) if key not in cached]
            for start in range(0, len(todo), BATCH):
                idx = todo[start : start + BATCH]
                vecs = self._e5().embed([texts[i] for i in idx], kind=kind)
                out[idx] = vecs.reshape(len(idx), DIM)
                if db:
                    db.executemany(
                        "INSERT OR REPLACE INTO emb VALUES (?, ?)", [(keys[i], out[i].tobytes()) for i in idx]
                    )
                    db.commit()
            for i, key in enumerate(keys):
                if key in cached:
                    out[i] = np.frombuffer(cached[key], dtype=np.float32)
        return out

    @staticmethod
    def _lookup(db: sqlite3.Connection, keys: list[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            found.update(db.execute(f"SELECT key, vec FROM emb WHERE key IN ({marks})", part).fetchall())
        return found

    def passages(self, texts: Sequence[str]) -> Vectors:
        """Embed documents (``passage:`` prefix), shape ``(len(texts), 384)``."""
        return self._embed(texts, "passage")

    def query(self, text: str) -> npt.NDArray[np.float32]:
        """Embed one query (``query:`` prefix), shape ``(384,)``."""
        return self._embed([text], "query")[0]

    def close(self) -> None:
        """Close the cache database."""
        if self._db is not None:
            self._db.close()
            self._db = None


class CachedE5Embedder:
    """The product's :class:`~hello_memory.Embedder` contract over an :class:`E5Encoder` (and its cache).

    Injected into ``MemoryManager`` by the ``hello_memory`` system when ``--embed-cache`` is given:
    same name and vectors as the default e5, so a sweep re-indexes and re-asks the same texts without
    embedding them again.
    """

    def __init__(self, encoder: E5Encoder) -> None:
        self._encoder = encoder

    @property
    def name(self) -> str:
        """The wrapped e5's name (collections record it)."""
        return str(self._encoder._e5().name)

    @property
    def dimension(self) -> int:
        """384."""
        return DIM

    def embed(self, texts: Sequence[str], *, kind: str = "passage") -> Vectors:
        """Cached e5 vectors (``kind="query"`` uses the query prefix, anything else the passage one)."""
        return self._encoder._embed(list(texts), "query" if kind == "query" else "passage")


_shared: dict[Path | None, E5Encoder] = {}


def shared_encoder(cache_dir: Path | None) -> E5Encoder:
    """One encoder per cache directory for the whole process (the model loads once)."""
    if cache_dir not in _shared:
        _shared[cache_dir] = E5Encoder(cache_dir=cache_dir)
    return _shared[cache_dir]
