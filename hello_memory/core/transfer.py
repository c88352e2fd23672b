"""Moving memories between deployments: ``hello-memory export --full`` / ``hello-memory import``.

The format is JSON Lines, the same in both modes, so a data directory moves to a server deployment
and back:

- line 1, the header: ``{"kind": "hello-memory-export", "format": 1, "embedder": ..., "dimension":
  ..., "vectors": true|false, "users": {user id: {"memories": n, "history": h}}}``;
- then one line per memory: ``{"kind": "memory", "item": {...}, "history": [...], "vector": [...]}``
  (``vector`` only with vectors, for the vector tiers), live and forgotten memories alike.

Import inserts every memory with its whole history (idempotent by id: a rerun stores nothing twice),
then writes vectors and graph links the way the target mode does. Vectors are reused only from the
same embedder and dimension; from another, import refuses (:class:`~hello_memory.errors.EmbedderMismatchError`)
unless told to re-embed (or the export has no vectors). Afterwards the counts are read back per
user and compared with the header (:class:`~hello_memory.errors.StoreError` if they differ).
RAG knowledge bases are not part of the export: re-add their documents from the sources.
Export a store that is not being written to (the counts in the header are read first).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from hello_memory.core import index as memory_index
from hello_memory.core import server_writes as record_writes
from hello_memory.core.semantic import links_of
from hello_memory.errors import EmbedderMismatchError, InvalidInputError, StoreError
from hello_memory.models import HistoryEntry, ImportReport, MemoryItem, MemoryType
from hello_memory.stores.records.base import PendingOp, RecordOrder, RecordQuery, RecordWrite

if TYPE_CHECKING:
    from hello_memory.manager import MemoryManager

KIND, FORMAT = "hello-memory-export", 1
_BATCH = 256


def export_lines(
    mm: MemoryManager, *, vectors: bool = True, users: Iterable[str] | None = None
) -> Iterator[str]:
    """The export of every user (or of ``users``), line by line (see the module docstring)."""
    records = mm.bundle.records
    chosen = sorted(records.users()) if users is None else list(users)
    everything = RecordQuery(deleted=None, order=RecordOrder.OLDEST)
    items = {uid: records.scan(uid, everything) for uid in chosen}
    history = {uid: {it.id: records.history(it.id, uid) for it in items[uid]} for uid in chosen}
    header = {
        "kind": KIND,
        "format": FORMAT,
        "embedder": mm.embedder.name,
        "dimension": mm.embedder.dimension,
        "vectors": vectors,
        "users": {
            u: {"memories": len(items[u]), "history": sum(map(len, history[u].values()))} for u in chosen
        },
    }
    yield json.dumps(header, ensure_ascii=False)
    for uid in chosen:
        for start in range(0, len(items[uid]), _BATCH):
            part = items[uid][start : start + _BATCH]
            wanted = {
                it.id: (it.memory_type, _modality(it))
                for it in part
                if it.memory_type in memory_index.VECTOR_TIERS
            }
            found = mm.bundle.dense.vectors(uid, wanted) if vectors and wanted else {}
            for it in part:
                line: dict[str, Any] = {
                    "kind": "memory",
                    "item": it.model_dump(mode="json"),
                    "history": [h.model_dump(mode="json") for h in history[uid][it.id]],
                }
                if it.id in found:
                    line["vector"] = [round(float(x), 7) for x in found[it.id]]
                yield json.dumps(line, ensure_ascii=False)


def _modality(item: MemoryItem) -> str | None:
    return item.modality.value if item.modality is not None else None


def read_header(line: str) -> dict[str, Any]:
    """The header of an export, checked; raises InvalidInputError for anything else."""
    try:
        header = json.loads(line)
    except json.JSONDecodeError as e:
        raise InvalidInputError(f"not a hello-memory export (line 1 is not JSON: {e})") from e
    if not isinstance(header, dict) or header.get("kind") != KIND or header.get("format") != FORMAT:
        raise InvalidInputError(f"not a hello-memory export of format {FORMAT} (line 1 is no header)")
    return header


def import_lines(
    mm: MemoryManager, lines: IO[str] | Iterable[str], *, reembed: bool = False
) -> ImportReport:
    """Import an export into ``mm``'s stores; returns how many memories it holds and how many were embedded again.

    Raises:
        EmbedderMismatchError: the export's vectors come from another embedder (pass ``reembed``).
        InvalidInputError: not an export, or a malformed line (nothing after it is imported).
        StoreError: the counts read back differ from the header's.
    """
    stream = iter(lines)
    header = read_header(next(stream, ""))
    reuse = bool(header.get("vectors"))
    if reuse and (header.get("embedder"), header.get("dimension")) != (
        mm.embedder.name,
        mm.embedder.dimension,
    ):
        if not reembed:
            stored = f"{header.get('embedder')} ({header.get('dimension')}-d)"
            error = EmbedderMismatchError("export", stored, mm.embedder.name)
            error.args = (
                f"the export holds vectors of embedder {stored}, and this deployment embeds with "
                f"{mm.embedder.name} ({mm.embedder.dimension}-d): configure that embedder, or import with "
                "--reembed to embed every memory again (nothing was imported)",
            )
            raise error
        reuse = False
    ids: dict[str, list[str]] = {}
    reembedded, batch = 0, []
    for n, raw in enumerate(stream, start=2):
        if raw.strip():
            batch.append(_memory_line(raw, n))
            ids.setdefault(batch[-1][0].user_id, []).append(batch[-1][0].id)
        if len(batch) >= _BATCH:
            reembedded += _write(mm, batch, reuse)
            batch = []
    if batch:
        reembedded += _write(mm, batch, reuse)
    _verify(mm, header, ids)
    return ImportReport(memories=sum(map(len, ids.values())), reembedded=reembedded)


def _memory_line(raw: str, n: int) -> tuple[MemoryItem, tuple[HistoryEntry, ...], np.ndarray | None]:
    try:
        data = json.loads(raw)
        item = MemoryItem.model_validate(data["item"])
        history = tuple(HistoryEntry.model_validate(h) for h in data.get("history", []))
        vector = np.asarray(data["vector"], dtype=np.float32) if data.get("vector") is not None else None
    except (ValueError, KeyError, TypeError) as e:
        raise InvalidInputError(f"line {n} of the export is not a memory: {e}") from e
    return item, history, vector


def _write(
    mm: MemoryManager,
    batch: list[tuple[MemoryItem, tuple[HistoryEntry, ...], np.ndarray | None]],
    reuse: bool,
) -> int:
    """Insert one batch the way the target mode writes; returns how many vectors were embedded."""
    items = [it for it, _, _ in batch]
    vectors = {it.id: v for it, _, v in batch if reuse and v is not None}
    live = [it for it in items if it.deleted_at is None and it.memory_type in memory_index.VECTOR_TIERS]
    missing = [it for it in live if it.id not in vectors]
    vectors.update(memory_index.embed(mm, missing))
    linked = {it.id for it in items if it.deleted_at is None and it.memory_type == MemoryType.SEMANTIC}
    keeps = mm.bundle.records.keeps_vectors
    writes = [
        RecordWrite(
            it,
            history=history,
            facts=record_writes.facts_of(links_of(it)) if it.memory_type == MemoryType.SEMANTIC else None,
            vector=vectors.get(it.id) if keeps else None,
            pending=PendingOp.INDEX if it.id in linked or (not keeps and it.id in vectors) else None,
        )
        for it, history, _ in batch
    ]
    with mm.bundle.lock:
        if not keeps:
            memory_index.ensure_collections(mm, live)
        stored = mm.bundle.records.apply(writes)
        if not keeps:
            links = {it.id: links_of(it) for it in items if it.id in linked}
            memory_index.write(mm, [it for it in items if it.id in vectors or it.id in links], vectors, links)
            record_writes.settle(mm, [s for s in stored if s.item.id in vectors or s.item.id in links])
        else:
            record_writes.follow_up(mm, [s for s in stored if s.item.id in linked], "import", facts=False)
    return len(missing)


def _verify(mm: MemoryManager, header: dict[str, Any], ids: dict[str, list[str]]) -> None:
    """The header's counts per user, read back: every exported memory stored, with its history."""
    for uid, want in dict(header.get("users") or {}).items():
        mine = ids.get(uid, [])
        found = mm.bundle.records.read(uid, mine, include_deleted=True)
        history = sum(len(mm.bundle.records.history(mid, uid)) for mid in found)
        if len(mine) != int(want["memories"]) or len(found) != len(mine) or history < int(want["history"]):
            raise StoreError(
                f"import of user {uid!r} does not match the export: {len(mine)} memories read from the file, "
                f"{len(found)} stored, {history} history entries; the header says {want['memories']} and "
                f"{want['history']} (a truncated file, or a store that failed: import again, it is idempotent)"
            )
