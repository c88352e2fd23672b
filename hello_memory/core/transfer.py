"""Moving memories between deployments: ``hello-memory export --full`` / ``hello-memory import``.

The format is JSON Lines, the same in both modes, so a data directory moves to a server deployment
and back:

- line 1, the header: ``{"kind": "hello-memory-export", "format": 1, "embedder": ..., "dimension":
  ..., "vectors": true|false, "users": {user id: {"memories": n, "history": h}}}``;
- then one line per memory: ``{"kind": "memory", "item": {...}, "history": [...], "vector": [...]}``
  (``vector`` only with vectors, for the vector tiers), live and forgotten memories alike.

Import inserts every memory with its whole history (idempotent by id: a rerun stores nothing twice)
through the core's one write path (:mod:`hello_memory.core.writes`), so every line passes the same
validation gate as ``add`` (:mod:`hello_memory.core.gate`) before anything of its batch is stored: a
hostile line (a user id with a NUL, an oversized memory, year 9999, a vector that is not finite or
not of the right dimension) is refused with its line number and the number of memories imported
before it (the batches before it are stored; fix the file and import again: it is idempotent).
Vectors are reused only from the same embedder and dimension; from another, import refuses
(:class:`~hello_memory.errors.EmbedderMismatchError`) unless told to re-embed (or the export has no
vectors). Afterwards the counts are read back per user and compared with the header
(:class:`~hello_memory.errors.StoreError` if they differ). RAG knowledge bases are not part of the
export: re-add their documents from the sources. Export a store that is not being written to (the
counts in the header are read first).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import IO, Any

import numpy as np

from hello_memory.core import MemoryCore, gate, semantic, writes
from hello_memory.core.prepare import Prepared, embed
from hello_memory.errors import EmbedderMismatchError, HelloMemoryError, InvalidInputError, StoreError
from hello_memory.models import HistoryEntry, ImportReport, MemoryItem, MemoryType
from hello_memory.pace import pace
from hello_memory.stores.dense.base import VECTOR_TIERS
from hello_memory.stores.records.base import RecordOrder, RecordQuery

KIND, FORMAT = "hello-memory-export", 1
_BATCH = 256
Line = tuple[MemoryItem, tuple[HistoryEntry, ...], np.ndarray | None]


def export_lines(core: MemoryCore, *, vectors: bool = True, users: Iterable[str] | None = None) -> Iterator[str]:
    """The export of every user (or of ``users``), line by line (see the module docstring)."""
    records = core.records
    chosen = sorted(records.users()) if users is None else list(users)
    everything = RecordQuery(deleted=None, order=RecordOrder.OLDEST)
    items = {uid: records.scan(uid, everything) for uid in chosen}
    history = {uid: {it.id: records.history(it.id, uid) for it in items[uid]} for uid in chosen}
    header = {
        "kind": KIND,
        "format": FORMAT,
        "embedder": core.embedder.name,
        "dimension": core.embedder.dimension,
        "vectors": vectors,
        "users": {
            u: {"memories": len(items[u]), "history": sum(map(len, history[u].values()))} for u in chosen
        },
    }
    yield json.dumps(header, ensure_ascii=False)
    for uid in chosen:
        for start in range(0, len(items[uid]), _BATCH):
            part = items[uid][start : start + _BATCH]
            wanted = {it.id: (it.memory_type, _modality(it)) for it in part if it.memory_type in VECTOR_TIERS}
            found = core.dense.vectors(uid, wanted) if vectors and wanted else {}
            for it in part:
                pace()  # an export runs over a whole store (hello_memory.pace)
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


def import_lines(core: MemoryCore, lines: IO[str] | Iterable[str], *, reembed: bool = False) -> ImportReport:
    """Import an export into ``core``'s stores; returns how many memories it holds and how many were embedded again.

    Raises:
        EmbedderMismatchError: the export's vectors come from another embedder (pass ``reembed``).
        InvalidInputError: not an export, or a line refused by the write gate (its batch is not
            stored; the message says how many memories were imported before it).
        StoreError: the counts read back differ from the header's.
    """
    stream = iter(lines)
    header = read_header(next(stream, ""))
    reuse = _reuse_vectors(core, header, reembed)
    ids: dict[str, list[str]] = {}
    done = ImportReport(memories=0, reembedded=0)
    batch: list[tuple[int, Line]] = []
    for n, raw in enumerate(stream, start=2):
        pace()
        if raw.strip():
            batch.append((n, _memory_line(raw, n)))
        if len(batch) >= _BATCH:
            done = _write(core, batch, reuse, done, ids)
            batch = []
    if batch:
        done = _write(core, batch, reuse, done, ids)
    _verify(core, header, ids)
    return done


def _reuse_vectors(core: MemoryCore, header: dict[str, Any], reembed: bool) -> bool:
    """Whether the export's vectors can be stored as they are (same embedder and dimension)."""
    if not header.get("vectors"):
        return False
    if (header.get("embedder"), header.get("dimension")) == (core.embedder.name, core.embedder.dimension):
        return True
    if reembed:
        return False
    stored = f"{header.get('embedder')} ({header.get('dimension')}-d)"
    error = EmbedderMismatchError("export", stored, core.embedder.name)
    error.args = (
        f"the export holds vectors of embedder {stored}, and this deployment embeds with "
        f"{core.embedder.name} ({core.embedder.dimension}-d): configure that embedder, or import with "
        "--reembed to embed every memory again (nothing was imported)",
    )
    raise error


def _memory_line(raw: str, n: int) -> Line:
    try:
        data = json.loads(raw)
        item = MemoryItem.model_validate(data["item"])
        history = tuple(HistoryEntry.model_validate(h) for h in data.get("history", []))
        vector = np.asarray(data["vector"], dtype=np.float32) if data.get("vector") is not None else None
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise InvalidInputError(f"line {n} of the export is not a memory: {e}") from e
    return item, history, vector


def _write(
    core: MemoryCore, batch: list[tuple[int, Line]], reuse: bool, done: ImportReport, ids: dict[str, list[str]]
) -> ImportReport:
    """Gate, then insert one batch through the write path; returns the running report."""
    vectors: dict[str, np.ndarray] = {}
    for n, (item, history, vector) in batch:
        try:
            gate.check_item(item)
            for entry in history:
                gate.check_history(entry, item.id)
            if reuse and vector is not None and item.deleted_at is None and item.memory_type in VECTOR_TIERS:
                vectors[item.id] = gate.check_vector(vector, core.embedder.dimension, item.id)
        except HelloMemoryError as e:  # bad input in the file, whatever the check that caught it
            raise InvalidInputError(
                f"line {n} of the export was refused: {e}; {done.memories} memories were imported before "
                "its batch (nothing of this batch is stored; fix the file and import again: it is idempotent)",
                field=getattr(e, "field", None),
            ) from e
    items = [it for _, (it, _, _) in batch]
    live = [it for it in items if it.deleted_at is None and it.memory_type in VECTOR_TIERS]
    missing = [it for it in live if it.id not in vectors]
    vectors.update(embed(core, missing))
    links = {
        it.id: semantic.links_of(it)
        for it in items
        if it.deleted_at is None and it.memory_type == MemoryType.SEMANTIC
    }
    recorded = {it.id: h for _, (it, h, _) in batch}
    with core.lock:  # one batch of the file: one bounded write step
        writes.insert(core, Prepared(items, vectors, links), history=recorded, supersede=False, what="import")
    for it in items:
        ids.setdefault(it.user_id, []).append(it.id)
    return ImportReport(memories=done.memories + len(items), reembedded=done.reembedded + len(missing))


def _verify(core: MemoryCore, header: dict[str, Any], ids: dict[str, list[str]]) -> None:
    """The header's counts per user, read back: every exported memory stored, with its history."""
    for uid, want in dict(header.get("users") or {}).items():
        mine = ids.get(uid, [])
        found = core.records.read(uid, mine, include_deleted=True)
        history = sum(len(core.records.history(mid, uid)) for mid in found)
        if len(mine) != int(want["memories"]) or len(found) != len(mine) or history < int(want["history"]):
            raise StoreError(
                f"import of user {uid!r} does not match the export: {len(mine)} memories read from the file, "
                f"{len(found)} stored, {history} history entries; the header says {want['memories']} and "
                f"{want['history']} (a truncated file, or a store that failed: import again, it is idempotent)"
            )
