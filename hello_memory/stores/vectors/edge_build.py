"""The HNSW graph of an Edge collection, built in the background while the collection keeps serving.

Until its graph is built, an Edge collection is searched exactly (brute force), which grows with the
collection. ``EdgeShard.optimize()`` builds the graph but holds the GIL for the whole build (minutes
at a million points), so no thread of the process runs meanwhile. The build therefore runs in a
child process, on a copy of the collection's shard:

1. under the store's lock: flush the live shard and copy its directory to ``shard.building``;
   from then on the store notes the id of every point it writes or deletes in the collection;
2. a child process loads the copy, optimizes it (the HNSW graph) and closes it; the live shard
   keeps serving searches and writes;
3. under the store's lock: load the built copy here, bring every noted point to its live state
   (upsert with its vector and payload, or delete), flush and close it; close the live shard; rename
   it ``shard.old``, rename the copy ``shard``, load it, remove the old one.

A crash at any point leaves a complete shard: before step 3's first rename the live ``shard`` is
untouched (a stale ``shard.building`` is removed on the next load); between the two renames only
``shard.old`` exists and the next load renames it back; after the second, ``shard`` holds every
write. A failed build is logged and forgotten (the collection stays as it was); the store does not
try again for that collection until it is next opened (a failing build would otherwise repeat at
once). The child runs at a lower priority (nice +10: its own, not the serving process's) and dies
with the process that started it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import qdrant_edge as qe

logger = logging.getLogger(__name__)

BUILDING = "shard.building"
REBUILD_FRACTION = 0.1
OLD = "shard.old"
# The child indexes every segment it is given (the engine's own size threshold off: the store decides
# when a build is worth it), at a lower priority than the process that serves.
# The child dies with the process that serves (Linux: the kernel sends it SIGKILL when its parent
# exits, killed included; a parent already gone before that is caught by the parent-pid check):
# a build nobody waits for only burns CPU and disk. Elsewhere it runs to its end.
DIE_WITH_PARENT = (
    "import os, signal, sys\n"
    "if sys.platform.startswith('linux'):\n"
    "    import ctypes\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG\n"
    "    if os.getppid() != int(os.environ['HELLO_MEMORY_BUILD_PARENT']): os._exit(1)\n"
)
_CHILD = DIE_WITH_PARENT + (
    "import os, sys\n"
    "if hasattr(os, 'nice'): os.nice(10)\n"
    "import qdrant_edge as qe\n"
    "from hello_memory.stores.vectors.edge_engine import vector_params\n"
    "vectors = vector_params(int(sys.argv[2]), sys.argv[3] == 'compact')\n"
    "config = qe.EdgeConfig(vectors=vectors, optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1))\n"
    "s = qe.EdgeShard.load(sys.argv[1], config); s.optimize(); s.flush(); s.close()\n"
)
# The configuration a shard is loaded with replaces the one it was created with, so the child builds
# the collection's own layout (mapped or compact); it imports it from this package, found here.
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])


def recover(collection_dir: Path, shard_dir_name: str) -> None:
    """Leave ``collection_dir`` with one complete shard after a build that did not finish (see above)."""
    shard, old, building = (collection_dir / n for n in (shard_dir_name, OLD, BUILDING))
    if not shard.exists() and old.exists():
        os.replace(old, shard)  # crashed between the two renames: the old shard is complete
        logger.warning("restored %s after an interrupted index build", shard)
    for leftover in (old, building):
        if leftover.exists():
            shutil.rmtree(leftover, ignore_errors=True)


def start(
    collection_dir: Path, shard_dir_name: str, shard: Any, dimension: int, budget: Any, compact: bool = False
) -> Build | None:
    """Step 1 of a build (the caller holds the store's lock), or ``None`` when there is no room for it
    on the disk (the copy and the segments the build writes; ``budget`` is the store's ``DiskBudget``)."""
    build = Build(collection_dir, shard_dir_name, dimension, compact)
    try:
        points = int(shard.count(qe.CountRequest(exact=True)))
        if not budget.room(budget.min_free + 3 * points * (4 * dimension + 1024)):
            logger.warning("no room on the disk to build the index of %s; searched exactly", collection_dir.name)
            return None
        build.start_copy(shard)
    except Exception as e:  # the engine's errors are plain Exceptions; the write before this succeeded
        logger.warning("index build of %s not started: %s", collection_dir.name, e)
        build.cancel()
        return None
    return build


def complete(build: Build, name: str, shards: dict[str, Any], lock: Any, closed: Callable[[], bool]) -> bool:
    """Run steps 2 and 3 of ``build`` (a background thread): the child, then the swap under ``lock``.

    ``shards`` is the store's map of open shards: the swapped-in shard replaces the live one; after a
    failed swap the entry is dropped, so the next use loads the one complete shard from disk. Returns
    whether the built shard was swapped in.
    """
    built = build.run_child()
    with lock:
        if not built or closed() or shards.get(name) is None:
            build.cancel()
            return False
        live = shards[name]
        try:
            shards[name] = build.finish(live, lambda p: qe.EdgeShard.load(str(p)))
            logger.info("index of %s built in the background", name)
            return True
        except Exception as e:  # the next load finds one complete shard (recover)
            logger.warning("index build of %s not swapped in: %s", name, e)
            with contextlib.suppress(Exception):  # still open when the replay failed: release its WAL lock
                live.close()
            shards.pop(name, None)
            build.cancel()
            return False


def due(shard: Any, threshold: int) -> bool:
    """Whether ``shard`` needs its graph (re)built: ``threshold`` points, and a tenth of all its points,
    outside the graph. Each build re-indexes the whole collection, so the second condition keeps the
    total build work proportional to the collection's size; ``False`` when the engine cannot say (a
    write that succeeded must not fail on its bookkeeping)."""
    try:
        info = shard.info()
    except Exception as e:
        logger.warning("cannot read the shard's index state: %s", e)
        return False
    total = int(info.points_count)
    outside = total - int(info.indexed_vectors_count or 0)
    return outside >= max(threshold, REBUILD_FRACTION * total)


class Build:
    """One background build of one collection (see the module docstring); the store drives it.

    Args:
        collection_dir: the collection's directory.
        shard_dir_name: the live shard's directory name inside it.
        dimension: the collection's vector dimension.
        compact: the collection keeps its indexed vectors compact (``edge_engine.vector_params``).

    ``touched`` holds the ids written or deleted since the copy (the store adds to it under its lock).
    """

    def __init__(self, collection_dir: Path, shard_dir_name: str, dimension: int, compact: bool = False) -> None:
        self.collection_dir = collection_dir
        self.shard_dir_name = shard_dir_name
        self.dimension = dimension
        self.compact = compact
        self.touched: set[str] = set()
        self.done = threading.Event()
        self._child: subprocess.Popen[bytes] | None = None
        self._cancelled = False

    @property
    def copy(self) -> Path:
        return self.collection_dir / BUILDING

    def start_copy(self, live: Any) -> None:
        """Step 1 (the caller holds the store's lock): flush the live shard and copy it."""
        live.flush()
        shutil.rmtree(self.copy, ignore_errors=True)
        shutil.copytree(self.collection_dir / self.shard_dir_name, self.copy)

    def run_child(self, timeout: float | None = None) -> bool:
        """Step 2 (no lock held): optimize the copy in a child process; whether it succeeded."""
        if self._cancelled:
            return False
        layout = "compact" if self.compact else "mapped"
        path = os.pathsep.join(p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
        self._child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(self.copy), str(self.dimension), layout],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": path, "HELLO_MEMORY_BUILD_PARENT": str(os.getpid())},
        )
        try:
            _, err = self._child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.cancel()
            return False
        if self._child.returncode != 0:
            if not self._cancelled:
                logger.warning("index build of %s failed: %s", self.collection_dir.name, err.decode()[-500:])
            return False
        return not self._cancelled

    def finish(self, live: Any, load: Callable[[Path], Any]) -> Any:
        """Step 3 (the caller holds the store's lock): replay what changed, swap, return the new shard."""
        built = load(self.copy)
        try:
            _replay(live, built, sorted(self.touched))
            built.flush()
        finally:
            built.close()
        live.close()
        shard, old = self.collection_dir / self.shard_dir_name, self.collection_dir / OLD
        shutil.rmtree(old, ignore_errors=True)
        os.replace(shard, old)
        os.replace(self.copy, shard)
        new = load(shard)
        shutil.rmtree(old, ignore_errors=True)
        return new

    def cancel(self) -> None:
        """Stop the child (when running) and drop the copy; the live shard is untouched."""
        self._cancelled = True
        child = self._child
        if child is not None and child.poll() is None:
            child.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=30)
        shutil.rmtree(self.copy, ignore_errors=True)


def _replay(live: Any, built: Any, ids: list[str]) -> None:
    """Bring the points ``ids`` of ``built`` to their state in ``live`` (present: upsert; absent: delete)."""
    for start in range(0, len(ids), 1024):
        batch = ids[start : start + 1024]
        present = {str(r.id): r for r in live.retrieve(batch, True, True)}
        if present:
            points = [qe.Point(pid, r.vector, r.payload or {}) for pid, r in present.items()]
            built.update(qe.UpdateOperation.upsert_points(points))
        gone: list[int | uuid.UUID | str] = [pid for pid in batch if pid not in present]
        if gone:
            built.update(qe.UpdateOperation.delete_points(gone))
