"""Build the configured embedder.

Backends are imported inside :func:`make_embedder` so that choosing one never imports another
(or its optional dependency). The checks every embedder runs live in :mod:`hello_memory.embedders.base`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from hello_memory.embedders.base import Embedder
from hello_memory.errors import InvalidInputError

if TYPE_CHECKING:
    from hello_memory.settings import Settings

logger = logging.getLogger(__name__)


def make_embedder(settings: Settings) -> Embedder:
    """Build the embedder that ``settings.resolved_embedder()`` names.

    Nothing is loaded or connected here; models load on the first ``embed`` call.

    Example:
        >>> from hello_memory.settings import Settings
        >>> make_embedder(Settings(embedder="tfidf")).name
        'hashing-tfidf-v1:1024'
    """
    kind = settings.resolved_embedder()
    logger.debug("building embedder %s", kind)
    if kind == "e5":
        from hello_memory.embedders.e5 import E5Embedder

        return E5Embedder(engine=settings.e5_engine)
    if kind == "sentence-transformers":
        from hello_memory.embedders.sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(settings.embedder_model, batch_size=settings.embed_batch_size)
    if kind == "dashscope":
        from hello_memory.embedders.dashscope import DashScopeEmbedder

        if settings.dashscope_api_key is None:
            raise InvalidInputError(
                "embedder 'dashscope' needs DASHSCOPE_API_KEY to be set", field="dashscope_api_key"
            )
        return DashScopeEmbedder(
            settings.dashscope_api_key.get_secret_value(),
            model=settings.dashscope_embedding_model,
            base_url=settings.dashscope_base_url,
        )
    from hello_memory.embedders.hashing import HashingTfidfEmbedder

    return HashingTfidfEmbedder()
