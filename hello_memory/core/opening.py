"""Opening the core over opened stores (what ``MemoryManager`` does when it is built)."""

from __future__ import annotations

from hello_memory.core import MemoryCore
from hello_memory.core.recovery import recover
from hello_memory.embedders.base import Embedder
from hello_memory.embedders.lazy import LazyEmbedder
from hello_memory.llm.base import LLMClient
from hello_memory.models import MemoryType
from hello_memory.settings import Settings
from hello_memory.stores.bundle import StoreBundle


def open_core(
    bundle: StoreBundle,
    settings: Settings,
    enabled: tuple[MemoryType, ...],
    *,
    embedder: Embedder | None,
    llm: LLMClient | None,
) -> MemoryCore:
    """The core over opened stores: names the embedder to the stores that need it, then completes
    the pending work recovery finds (:mod:`hello_memory.core.recovery`)."""
    core = MemoryCore(
        records=bundle.records,
        dense=bundle.dense,
        graph=bundle.graph,
        embedder=LazyEmbedder.of(embedder) if embedder is not None else LazyEmbedder.from_settings(settings),
        llm=llm,
        settings=settings,
        enabled=enabled,
        lock=bundle.lock,
    )
    bundle.bind_embedder(core.embedder)
    recover(core, opening=True)
    return core
