"""Embedded vector index on Qdrant Edge (``qdrant-edge-py``): the default, no server needed.

Layout under ``path``: one directory per collection holding ``collection.json`` (dimension and
embedder, written atomically; its presence marks the collection as created) and ``shard/``, the
Edge shard with cosine distance.

Durability: every update is appended to the shard's write-ahead log before ``upsert`` returns,
and the log is replayed on the next load, so a returned upsert survives the process being
killed (SIGKILL, OOM). Surviving an OS crash or power cut needs ``flush()``, which fsyncs the
shard's files: 0.1-0.6 s where an fsync costs ~7 ms, too slow per write. The store flushes once
``flush_interval`` seconds of writes have passed, on ``close()``, and after every write with
``flush_every_write=True``.

One process at a time: an open shard holds a lock on its WAL; a second opener gets
:class:`~hello_memory.errors.StoreLockedError`.

Full disks: the engine writes through memory maps, where running out of space is a SIGBUS that kills
the process. Every load, write and flush first checks the free space it may need
(:mod:`hello_memory.stores.space`): ``min_free_bytes`` plus the size of the write and of the next flush
(more to create a collection on tmpfs) and raises :class:`~hello_memory.errors.DiskFullError` instead.
A collection is flushed once ``MAX_UNFLUSHED_BYTES`` are unflushed, and below 1 GiB free a
``BALLAST_BYTES`` reserve file is kept and given back when a flush would not fit. Reads need only
``LOAD_FREE_BYTES`` (plus, on tmpfs, the pages a first load of a shard fills).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import qdrant_edge as qe

from hello_memory.errors import (
    CorruptStoreError,
    DiskFullError,
    HelloMemoryError,
    NotFoundError,
    StoreError,
    StoreLockedError,
)
from hello_memory.stores import space
from hello_memory.stores.vectors.base import Filter, VectorHit, VectorPoint
from hello_memory.stores.vectors.rules import (
    FLOAT_INDEX_KEYS,
    KEYWORD_INDEX_KEYS,
    Clause,
    CollectionMeta,
    CompiledFilter,
    check_collection_args,
    check_collection_name,
    check_limit,
    compile_delete_filter,
    compile_filter,
    existing_id_candidates,
    prepare_points,
    unit_vector,
)

logger = logging.getLogger(__name__)

#: Free space every write asks for, beyond its own size (a WAL segment fills through its memory map).
MIN_FREE_BYTES = 16 << 20
#: Free space to create a collection on tmpfs, where its payload indexes write ~17 MiB at once (on
#: ext4 0.2 MiB: there it needs ``min_free_bytes``).
CREATE_FREE_BYTES = 64 << 20
#: Free space to load a shard, read and flush (the engine touches a few new pages).
LOAD_FREE_BYTES = 512 << 10
#: Free space to delete points (a WAL record each): deleting must stay possible on a nearly full disk.
DELETE_FREE_BYTES = 1 << 20
#: Unflushed writes after which a collection is flushed (a flush writes them through memory maps).
MAX_UNFLUSHED_BYTES = 8 << 20
#: Space kept allocated in ``.reserve`` while writing, released so that a flush fits a full disk.
BALLAST_BYTES = 24 << 20
META_FILE = "collection.json"
SHARD_DIR = "shard"
_WRITE_BATCH = 1024
_SCROLL_PAGE = 2048
_NO_VECTOR = np.empty(0, dtype=np.float32)


def to_edge_filter(where: Filter | CompiledFilter | None) -> qe.Filter | None:
    """Convert a hello-memory filter to a ``qdrant_edge.Filter`` (``None`` = match all)."""
    compiled = where if isinstance(where, CompiledFilter) or where is None else compile_filter(where)
    return None if compiled is None else _compiled_to_edge(compiled)


def _compiled_to_edge(compiled: CompiledFilter) -> qe.Filter:
    must = [_edge_condition(c) for c in compiled.must]
    must_not = [_edge_condition(c) for c in compiled.must_not]
    return qe.Filter(must=must or None, must_not=must_not or None)


def _edge_condition(clause: Clause) -> Any:
    key = clause.key
    alts: list[Any] = []
    for values in (clause.strings, clause.ints):
        if len(values) == 1:
            alts.append(qe.FieldCondition(key, match=qe.MatchValue(values[0])))
        elif values:
            alts.append(qe.FieldCondition(key, match=qe.MatchAny(list(values))))  # type: ignore[arg-type]
    # qdrant-edge 0.9 converts MatchValue(True) to the integer 1 (it tries int before bool);
    # numpy.bool_ has no __index__, so it can only convert as a bool.
    alts += [qe.FieldCondition(key, match=qe.MatchValue(np.bool_(b))) for b in clause.bools]  # type: ignore[arg-type]
    alts += [qe.FieldCondition(key, range=qe.RangeFloat(gte=lo, lte=hi)) for lo, hi in clause.ranges]
    if clause.empty:
        alts.append(qe.IsEmptyCondition(key))
    if not alts:
        return qe.HasIdCondition(set())  # an empty "any of": matches nothing
    return alts[0] if len(alts) == 1 else qe.Filter(should=alts)


class QdrantEdgeVectorStore:
    """A :class:`~hello_memory.stores.vectors.base.VectorStore` in a local directory (Qdrant Edge shards).

    Args:
        path: data directory; created if missing. Shards open on first use.
        flush_every_write: flush after every write (durable across power loss; slow, see above).
        flush_interval: otherwise flush when this many seconds passed since the last flush.
        min_free_bytes: free space a write asks for beyond its own size (see "Full disks" above).

    Example:
        >>> import tempfile, uuid, numpy as np
        >>> from hello_memory.stores.vectors.base import VectorPoint
        >>> with QdrantEdgeVectorStore(tempfile.mkdtemp()) as store:
        ...     store.ensure_collection("memories", 3, embedder="fake")
        ...     pid = str(uuid.uuid4())
        ...     store.upsert("memories", [VectorPoint(pid, np.array([1, 0, 0], np.float32), {})])
        ...     store.search("memories", np.array([1, 0, 0], np.float32), limit=1)[0].id == pid
        True
    """

    def __init__(
        self,
        path: str | Path,
        *,
        flush_every_write: bool = False,
        flush_interval: float = 30.0,
        min_free_bytes: int = MIN_FREE_BYTES,
    ) -> None:
        self._path = Path(path)
        self._min_free = min_free_bytes
        try:
            self._path.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # the path is a file, read-only, ...
            raise StoreError(f"cannot create the vector directory {str(path)!r}: {e.strerror or e}") from e
        self._flush_every_write = flush_every_write
        self._flush_interval = flush_interval
        self._shards: dict[str, qe.EdgeShard] = {}
        self._metas: dict[str, CollectionMeta] = {}
        self._last_flush = time.monotonic()
        self._debt: dict[str, int] = {}  # per collection, bytes written since its last flush
        self._ballast = space.Ballast(self._path / ".reserve", BALLAST_BYTES)
        self._lock = threading.RLock()
        self._closed = False

    @property
    def backend(self) -> str:
        """``"qdrant-edge"``."""
        return "qdrant-edge"

    @property
    def path(self) -> Path:
        """The data directory."""
        return self._path

    def __enter__(self) -> QdrantEdgeVectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- collections ----------------------------------------------------------------------------
    def ensure_collection(self, name: str, dimension: int, *, embedder: str) -> None:
        """Create ``name`` or verify that it matches ``dimension`` and ``embedder``."""
        check_collection_args(name, dimension, embedder)
        with self._lock:
            self._check_open()
            meta = self._metas.get(name) or self._read_meta(name)
            if meta is None:
                self._create(name, CollectionMeta(dimension, embedder))
                return
            meta.check(name, dimension, embedder)
            self._open(name)

    def collections(self) -> list[str]:
        """Names of existing collections."""
        self._check_open()
        return sorted(
            p.parent.name for p in self._path.glob(f"*/{META_FILE}") if not p.parent.name.startswith(".")
        )

    def drop_collection(self, name: str) -> None:
        """Delete a collection and all its points (no error if absent)."""
        check_collection_name(name)
        with self._lock:
            self._check_open()
            shard = self._shards.pop(name, None)
            self._metas.pop(name, None)
            if shard is not None:
                with self._errors("close the shard"):
                    shard.close()
            cdir = self._path / name
            if not cdir.exists():
                return
            trash = self._path / f".trash-{name}-{uuid.uuid4().hex}"
            os.replace(cdir, trash)  # atomic: the collection disappears at once
            shutil.rmtree(trash, ignore_errors=True)
            logger.info("dropped collection %s", name)

    # -- writes ---------------------------------------------------------------------------------
    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points; nothing is written if any point is invalid."""
        with self._lock:
            shard, meta = self._open(collection)
            ids, matrix, payloads = prepare_points(collection, points, meta.dimension)
            if ids:  # a point costs its vector about three times (WAL, vector storage, segment copy)
                self._ballast.fill()  # no write without room for the flush that must follow it
                write = len(ids) * (12 * meta.dimension + 4096)
                self._need(self._min_free + self._flush_need() + self._ballast.missing() + write)
                self._owe(collection, len(ids) * (4 * meta.dimension + 1024))
            for start in range(0, len(ids), _WRITE_BATCH):
                end = start + _WRITE_BATCH
                with self._errors("upsert"):
                    batch = [
                        qe.Point(pid, vec.tolist(), payload)
                        for pid, vec, payload in zip(
                            ids[start:end], matrix[start:end], payloads[start:end], strict=True
                        )
                    ]
                    shard.update(qe.UpdateOperation.upsert_points(batch))
            if ids:
                self._after_write(collection, shard)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id (absent ids are ignored)."""
        candidates = existing_id_candidates(ids)
        with self._lock:
            shard, _ = self._open(collection)
            if not candidates:
                return
            self._need(DELETE_FREE_BYTES)
            self._owe(collection, 64 * len(candidates))
            with self._errors("delete"):
                shard.update(qe.UpdateOperation.delete_points(list(candidates)))
            self._after_write(collection, shard)

    def delete_where(self, collection: str, where: Filter) -> int:
        """Delete every point matching ``where`` (which must have a condition); returns the count."""
        edge_filter = _compiled_to_edge(compile_delete_filter(where))
        with self._lock:
            shard, _ = self._open(collection)
            with self._errors("delete"):
                n = shard.count(qe.CountRequest(exact=True, filter=edge_filter))
                if n:
                    self._need(DELETE_FREE_BYTES)
                    self._owe(collection, 64 * n)
                    shard.update(qe.UpdateOperation.delete_points_by_filter(edge_filter))
            if n:
                self._after_write(collection, shard)
            return n

    # -- reads ----------------------------------------------------------------------------------
    def search(
        self,
        collection: str,
        vector: npt.NDArray[np.float32],
        *,
        limit: int,
        where: Filter | None = None,
    ) -> list[VectorHit]:
        """Nearest neighbours by cosine similarity."""
        edge_filter = to_edge_filter(where)
        shard, meta = self._open(collection)
        query = unit_vector(collection, vector, meta.dimension)
        if check_limit(limit) == 0:
            return []
        request = qe.QueryRequest(
            limit=limit, query=qe.Query.Nearest(query.tolist()), filter=edge_filter, with_payload=True
        )
        with self._errors("search"):
            hits = shard.query(request)
        return [VectorHit(str(h.id), float(h.score), h.payload or {}) for h in hits]

    def get(self, collection: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[VectorPoint]:
        """Points by id (absent ids are skipped); vectors come back L2-normalised."""
        shard, _ = self._open(collection)
        candidates = existing_id_candidates(ids)
        if not candidates:
            return []
        with self._errors("retrieve"):
            records = shard.retrieve(list(candidates), True, with_vectors)
        return [
            VectorPoint(
                str(r.id),
                np.asarray(r.vector, dtype=np.float32) if with_vectors else _NO_VECTOR.copy(),
                r.payload or {},
            )
            for r in records
        ]

    def count(self, collection: str, where: Filter | None = None) -> int:
        """Number of points (matching ``where``)."""
        edge_filter = to_edge_filter(where)
        shard, _ = self._open(collection)
        with self._errors("count"):
            return shard.count(qe.CountRequest(exact=True, filter=edge_filter))

    def ids(self, collection: str, where: Filter | None = None) -> list[str]:
        """Every point id (matching ``where``)."""
        edge_filter = to_edge_filter(where)
        shard, _ = self._open(collection)
        out: list[str] = []
        offset: Any = None
        with self._errors("scroll"):
            while True:
                request = qe.ScrollRequest(
                    offset=offset,
                    limit=_SCROLL_PAGE,
                    filter=edge_filter,
                    with_payload=False,
                    with_vector=False,
                )
                records, offset = shard.scroll(request)
                out.extend(str(r.id) for r in records)
                if offset is None:
                    return out

    # -- maintenance ----------------------------------------------------------------------------
    def flush(self) -> None:
        """Flush every open shard to disk (durable across power loss)."""
        with self._lock:
            self._check_open()
            for name, shard in self._shards.items():
                if not self._room(self._flush_need(name)):
                    self._ballast.release()
                self._need(self._flush_need(name))
                with self._errors("flush"):
                    shard.flush()
                self._debt.pop(name, None)
            self._last_flush = time.monotonic()

    def optimize(self, collection: str) -> bool:
        """Build the HNSW index and vacuum deletions; blocking (≈15 s for 20k 384-d on 2 cores).

        Without it, searches are exact brute force (≈1.5 ms at 20k 384-d). Returns whether
        anything changed.
        """
        with self._lock:
            shard, meta = self._open(collection)
            with self._errors("count"):
                points = shard.count(qe.CountRequest(exact=True))
            self._need(self._min_free + 2 * points * (4 * meta.dimension + 1024))  # segments are rebuilt
            with self._errors("optimize"):
                return shard.optimize()

    def close(self) -> None:
        """Flush and close every open shard; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            shards, self._shards = self._shards, {}
            failure: Exception | None = None
            for name, shard in shards.items():
                try:
                    self._flush_shard(name, shard)
                    shard.close()
                except Exception as e:  # close the others before reporting
                    logger.warning("closing collection %s failed: %s", name, e)
                    failure = failure or e
            if failure is not None:
                raise StoreError(f"qdrant-edge failed to close: {failure}") from failure

    # -- internals ------------------------------------------------------------------------------
    def _open(self, name: str) -> tuple[qe.EdgeShard, CollectionMeta]:
        """The cached shard and metadata of ``name``, loading them on first use."""
        with self._lock:
            self._check_open()
            shard = self._shards.get(name)
            if shard is not None:
                return shard, self._metas[name]
            check_collection_name(name)
            meta = self._read_meta(name)
            if meta is None:
                raise NotFoundError(
                    f"collection {name!r} does not exist; call ensure_collection first", object_id=name
                )
            shard_dir = self._path / name / SHARD_DIR
            self._need(LOAD_FREE_BYTES + space.populate_deficit(shard_dir))
            with self._errors("load the shard"):
                shard = qe.EdgeShard.load(str(shard_dir))
                _ensure_indexes(shard, lambda: self._need(self._min_free))
            self._shards[name], self._metas[name] = shard, meta
            return shard, meta

    def _create(self, name: str, meta: CollectionMeta) -> None:
        cdir = self._path / name
        shard_dir = cdir / SHARD_DIR
        if shard_dir.exists():  # left by an interrupted create: no metadata, so never committed
            shutil.rmtree(shard_dir)
        cdir.mkdir(parents=True, exist_ok=True)
        config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=meta.dimension, distance=qe.Distance.Cosine))
        self._ballast.fill()
        create = CREATE_FREE_BYTES if space.allocates_on_read(self._path) else self._min_free
        self._need(create + self._ballast.missing())
        with self._errors("create the shard"):
            shard = qe.EdgeShard.create(str(shard_dir), config)
            _ensure_indexes(shard)
            shard.flush()
        _write_json_atomic(cdir / META_FILE, meta.to_json())
        self._shards[name], self._metas[name] = shard, meta
        logger.info("created collection %s (%s dims, embedder %s)", name, meta.dimension, meta.embedder)

    def _read_meta(self, name: str) -> CollectionMeta | None:
        path = self._path / name / META_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return CollectionMeta(int(data["dimension"]), str(data["embedder"]))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise CorruptStoreError(str(path), str(e)) from e

    def _need(self, needed: int) -> None:
        """Refuse an engine call that could run the filesystem out of space (a SIGBUS, not an error)."""
        space.require(self._path, needed)

    def _room(self, needed: int) -> bool:
        free = space.free_bytes(self._path)
        return free is None or free >= needed

    def _owe(self, name: str, written: int) -> None:
        self._debt[name] = self._debt.get(name, 0) + written

    def _flush_need(self, name: str | None = None) -> int:
        """Free space a flush asks for: it writes the unflushed payloads and mappings through memory maps
        (a flush with too little room measured as a SIGBUS on ext4), for one collection or all."""
        debt = sum(self._debt.values()) if name is None else self._debt.get(name, 0)
        return LOAD_FREE_BYTES + 2 * debt

    def _flush_shard(self, name: str, shard: qe.EdgeShard) -> None:
        """Flush one collection, releasing the ballast first when the disk has no room left for it."""
        if not self._room(self._flush_need(name)):
            self._ballast.release()
        if self._room(self._flush_need(name)):
            with self._errors("flush"):
                shard.flush()
            self._debt.pop(name, None)
        else:  # the WAL holds every write: the next load replays it
            logger.warning("disk full: collection %s not flushed (its write-ahead log has it)", name)

    def _after_write(self, name: str, shard: qe.EdgeShard) -> None:
        now = time.monotonic()
        due = self._flush_every_write or now - self._last_flush >= self._flush_interval
        if due or self._debt.get(name, 0) > MAX_UNFLUSHED_BYTES:
            self._flush_shard(name, shard)
            self._last_flush = now

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the vector store is closed")

    @contextlib.contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Wrap engine exceptions in :class:`StoreError` (a held WAL lock in StoreLockedError)."""
        try:
            yield
        except HelloMemoryError:
            raise
        except Exception as e:
            if "WouldBlock" in str(e):  # the WAL's file lock is held by another EdgeShard
                raise StoreLockedError(str(self._path)) from e
            if "No space left" in str(e) or "os error 28" in str(e):
                raise DiskFullError(str(self._path), free_bytes=space.free_bytes(self._path)) from e
            raise StoreError(f"qdrant-edge failed to {action}: {e}") from e


def _ensure_indexes(shard: qe.EdgeShard, before_write: Any = None) -> None:
    """Create the payload indexes the shard lacks (idempotent, cheap when present)."""
    present = set(shard.info().payload_schema)
    wanted = [(k, qe.PayloadSchemaType.Keyword) for k in KEYWORD_INDEX_KEYS]
    wanted += [(k, qe.PayloadSchemaType.Float) for k in FLOAT_INDEX_KEYS]
    for key, schema in wanted:
        if key not in present:
            if before_write is not None:
                before_write()
            shard.update(qe.UpdateOperation.create_field_index(key, schema))


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write JSON via a temporary file and ``os.replace`` so readers never see half a file."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
