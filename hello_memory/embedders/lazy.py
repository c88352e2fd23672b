"""An embedder built on first use: opening a memory must not load a model it may never need."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hello_memory.embedders.base import Embedder, Vectors

if TYPE_CHECKING:
    from hello_memory.settings import Settings


class LazyEmbedder:
    """An :class:`~hello_memory.embedders.base.Embedder` that builds the real one when first used.

    Args:
        build: makes the embedder (e.g. from settings), called at most once.
        label: what :meth:`describe` says before the embedder is built (no model is loaded for it).

    Example:
        >>> from hello_memory.embedders.hashing import HashingTfidfEmbedder
        >>> lazy = LazyEmbedder(HashingTfidfEmbedder, label="tfidf")
        >>> lazy.loaded, lazy.describe()
        (False, 'tfidf')
        >>> lazy.embed(["hello"]).shape[0], lazy.loaded
        (1, True)
    """

    def __init__(self, build: Callable[[], Embedder], *, label: str = "") -> None:
        self._build, self._label = build, label
        self._embedder: Embedder | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(cls, embedder: Embedder) -> LazyEmbedder:
        """An already built embedder, behind the same interface."""
        lazy = cls(lambda: embedder, label=embedder.name)
        lazy._embedder = embedder
        return lazy

    @classmethod
    def from_settings(cls, settings: Settings) -> LazyEmbedder:
        """The embedder ``settings`` configure, built on first use (opening a memory loads no model)."""

        def build() -> Embedder:
            from hello_memory.embedders.factory import make_embedder

            return make_embedder(settings)

        return cls(build, label=settings.resolved_embedder())

    @property
    def loaded(self) -> bool:
        """True once the real embedder exists."""
        return self._embedder is not None

    def get(self) -> Embedder:
        """The real embedder (built now if needed)."""
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    self._embedder = self._build()
        return self._embedder

    def describe(self) -> str:
        """The embedder's name once built, else the label (reports must not load a model)."""
        return self._embedder.name if self._embedder is not None else self._label

    @property
    def name(self) -> str:
        """The real embedder's name."""
        return self.get().name

    @property
    def dimension(self) -> int:
        """The real embedder's dimension."""
        return self.get().dimension

    def embed(self, texts: Sequence[str], *, kind: str = "passage") -> Vectors:
        """Embed with the real embedder."""
        return self.get().embed(texts, kind=kind)
