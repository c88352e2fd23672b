"""The vector index factory: which :class:`~hello_memory.stores.vectors.base.VectorStore` the settings ask for.

Backends are imported on demand, so choosing one never imports the other's engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hello_memory.settings import Settings
    from hello_memory.stores.vectors.base import VectorStore


def open_vector_store(settings: Settings) -> VectorStore:
    """Build the vector index the settings ask for.

    A Qdrant server when ``settings.qdrant_url`` is set, else the embedded Qdrant Edge store in
    ``settings.home / "vectors"``. Nothing is opened or connected until first use.

    Example:
        >>> from hello_memory.settings import Settings
        >>> import tempfile
        >>> open_vector_store(Settings(home=tempfile.mkdtemp())).backend
        'qdrant-edge'
    """
    if settings.qdrant_url:
        from hello_memory.stores.vectors.qdrant import QdrantVectorStore

        key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        return QdrantVectorStore(
            url=settings.qdrant_url,
            api_key=key,
            timeout=settings.qdrant_timeout,
            prefix=settings.collection_prefix,
        )
    from hello_memory.stores.vectors.edge import QdrantEdgeVectorStore

    return QdrantEdgeVectorStore(settings.home / "vectors", compact=settings.vector_memory == "compact")
