"""DashScope (Alibaba Model Studio) text embeddings through its OpenAI-compatible ``/embeddings`` endpoint."""

from __future__ import annotations

import logging
import math
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from hello_memory._lazy import require
from hello_memory.embedders.base import BatchedEmbedder
from hello_memory.errors import EmbeddingError, InvalidInputError

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

MAX_BATCH = 10  # text-embedding-v3/v4 accept at most 10 inputs per request
_RETRY_STATUS = frozenset({408, 429})  # and every 5xx
_MAX_RETRY_AFTER = 30.0


class DashScopeEmbedder(BatchedEmbedder):
    """Remote embeddings from DashScope (``text-embedding-v3`` by default, 1024 dimensions).

    Texts are sent in requests of at most 10. A request that gets 429, 408, 5xx, a timeout
    or a connection error is retried up to ``max_retries`` times with exponential backoff
    (``retry_backoff * 2**attempt`` seconds, or the server's ``Retry-After`` up to 30 s). If any
    request still fails, the whole call raises :class:`EmbeddingError` and returns nothing, so a
    caller never stores part of a batch. Each response must hold exactly one finite, non-zero
    vector of ``dimension`` per input, matched by ``index``. Empty or whitespace-only texts are
    refused before any request. ``kind`` has no effect: the compatible endpoint has no
    query/document switch.

    The HTTP client is created on first use (or passed in; a passed client is not closed by
    :meth:`close`). Needs the ``dashscope`` extra (``httpx``).

    Args:
        api_key: DashScope API key.
        model: embedding model name.
        dimension: requested vector length (v3: 1024, 768, 512, 256, 128 or 64).
        base_url: compatible-mode base URL (``https://dashscope-intl.aliyuncs.com/compatible-mode/v1``
            for international keys).
        client: a pre-built ``httpx.Client`` (tests pass one with a mock transport).
        max_retries: retries per request after the first attempt.
        timeout: seconds per request when this class builds the client.
        retry_backoff: base backoff in seconds.
        batch_size: texts per request, at most 10.

    Example:
        >>> e = DashScopeEmbedder("sk-...", dimension=512)  # doctest: +SKIP
        >>> e.embed(["你好"]).shape  # doctest: +SKIP
        (1, 512)
    """

    def __init__(
        self,
        api_key: str,
        *,
        model: str = "text-embedding-v3",
        dimension: int = 1024,
        base_url: str = "https://dashscope.aliyuncs.com/compatible-mode/v1",
        client: httpx.Client | None = None,
        max_retries: int = 3,
        timeout: float = 30.0,
        retry_backoff: float = 0.5,
        batch_size: int = MAX_BATCH,
    ) -> None:
        if not api_key:
            raise InvalidInputError("DashScope needs an API key (DASHSCOPE_API_KEY)", field="api_key")
        if dimension < 1:
            raise InvalidInputError("dimension must be >= 1", field="dimension")
        if not 1 <= batch_size <= MAX_BATCH:
            raise InvalidInputError(f"batch_size must be in 1..{MAX_BATCH}", field="batch_size")
        if max_retries < 0:
            raise InvalidInputError("max_retries must be >= 0", field="max_retries")
        super().__init__(batch_size=batch_size)
        self._api_key = api_key
        self._model_name = model
        self._dimension = dimension
        self._url = base_url.rstrip("/") + "/embeddings"
        self._client = client
        self._owns_client = client is None
        self._max_retries = max_retries
        self._timeout = timeout
        self._backoff = retry_backoff
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """``"dashscope/<model>:<dimension>"``."""
        return f"dashscope/{self._model_name}:{self._dimension}"

    def _prepare(self, items: list[str], kind: str) -> list[str]:
        """Refuse empty texts before any request is sent.

        Raises:
            EmbeddingError: an empty or whitespace-only text.
        """
        empty = [i for i, t in enumerate(items) if not t.strip()]
        if empty:
            raise EmbeddingError(
                f"{self.name} cannot embed empty or whitespace-only texts (indexes {empty[:10]})"
            )
        return items

    def close(self) -> None:
        """Close the HTTP client if this object created it."""
        with self._lock:
            if self._client is not None and self._owns_client:
                self._client.close()
                self._client = None

    def __enter__(self) -> DashScopeEmbedder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                httpx_mod = require("httpx", "dashscope")
                self._client = httpx_mod.Client(timeout=self._timeout)
            return self._client

    def _embed_batch(self, batch: list[str], kind: str) -> np.ndarray:
        payload = {
            "model": self._model_name,
            "input": batch,
            "dimensions": self._dimension,
            "encoding_format": "float",
        }
        body = self._post(payload)
        return self._parse(body, len(batch))

    def _post(self, payload: dict[str, Any]) -> Any:
        """POST with retries; return the decoded JSON body or raise :class:`EmbeddingError`."""
        client = self._http()
        import httpx  # importable: the client above exists

        headers = {"Authorization": f"Bearer {self._api_key}"}
        for attempt in range(self._max_retries + 1):
            retry_after = None
            try:
                resp = client.post(self._url, json=payload, headers=headers)
            except httpx.TransportError as e:  # timeouts, connection errors
                problem = f"{type(e).__name__}: {e}"
            except (httpx.HTTPError, httpx.InvalidURL) as e:
                raise EmbeddingError(f"{self.name} request failed: {type(e).__name__}: {e}") from e
            else:
                if resp.status_code == 200:
                    return _json(resp, self.name)
                problem = f"HTTP {resp.status_code}: {_error_message(resp)}"
                if resp.status_code not in _RETRY_STATUS and resp.status_code < 500:
                    raise EmbeddingError(f"{self.name} request failed: {problem}")
                retry_after = _retry_after(resp)
            if attempt < self._max_retries:
                delay = retry_after if retry_after is not None else self._backoff * 2**attempt
                logger.warning(
                    "%s: %s; retry %s/%s in %.1fs", self.name, problem, attempt + 1, self._max_retries, delay
                )
                time.sleep(delay)
        raise EmbeddingError(f"{self.name} request failed after {self._max_retries + 1} attempts: {problem}")

    def _parse(self, body: Any, n: int) -> np.ndarray:
        """Exactly one vector per input, placed by ``index``."""
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise EmbeddingError(f"{self.name} response has no 'data' list")
        out = np.zeros((n, self._dimension), dtype=np.float32)
        seen: set[int] = set()
        for item in data:
            idx = item.get("index") if isinstance(item, dict) else None
            if not isinstance(idx, int) or not 0 <= idx < n or idx in seen:
                raise EmbeddingError(f"{self.name} response has an invalid or repeated index {idx!r}")
            vec = item.get("embedding")
            if not isinstance(vec, list) or len(vec) != self._dimension:
                got = len(vec) if isinstance(vec, list) else type(vec).__name__
                raise EmbeddingError(
                    f"{self.name} returned a vector of {got} for index {idx}, expected {self._dimension}"
                )
            if not all(type(x) in (int, float) and math.isfinite(x) for x in vec):
                raise EmbeddingError(f"{self.name} returned a non-numeric or non-finite value at index {idx}")
            out[idx] = vec
            seen.add(idx)
        if len(seen) != n:
            missing = sorted(set(range(n)) - seen)
            raise EmbeddingError(
                f"{self.name} returned {len(seen)} vectors for {n} texts (missing {missing[:10]})"
            )
        return out


def _json(resp: httpx.Response, name: str) -> Any:
    try:
        return resp.json()
    except ValueError as e:
        raise EmbeddingError(f"{name} returned a body that is not JSON: {resp.text[:200]!r}") from e


def _error_message(resp: httpx.Response) -> str:
    """The provider's error message (``{"error": {"message": ...}}``), else the start of the body."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:300]
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return str(body)[:300]


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    try:
        return min(max(float(value), 0.0), _MAX_RETRY_AFTER) if value is not None else None
    except ValueError:
        return None  # an HTTP date; fall back to our own backoff
