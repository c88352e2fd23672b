"""``RemoteRAG``: the :class:`rag.RAGPipeline` API over HTTP, against ``hello-memory serve``.

Same method names, arguments, return types and errors as ``RAGPipeline`` (both satisfy
:class:`rag.api.RAGAPI`). :meth:`RemoteRAG.add_document` reads the local file and uploads it; the
service converts and indexes it and records the client's path, so document ids and sources are the
ones an in-process pipeline would give. :meth:`RemoteRAG.add_server_document` indexes a file that is
already on the service's machine, under the folders it allows.

Example:
    >>> from rag.remote import RemoteRAG
    >>> kb = RemoteRAG("http://127.0.0.1:8765", namespace="docs", api_key="...")  # doctest: +SKIP
    >>> kb.add_document("guide.pdf").chunks                                      # doctest: +SKIP
    12
    >>> print(kb.ask("How do I reset my password?").answer)                      # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import SecretStr, TypeAdapter

from hello_memory.client.transport import DEFAULT_TIMEOUT, Transport
from hello_memory.errors import ConversionError
from hello_memory.validation import check_id, check_progress
from hello_memory.wire import Count
from rag.convert import _check_file
from rag.models import Answer, DocumentInfo, IngestReport, RAGStats, SearchResult

T = TypeVar("T")
UPLOAD_TIMEOUT = 900.0
MAX_UPLOAD_BYTES = 200 * 1024 * 1024  # the converter's own limit
_INGEST = TypeAdapter(IngestReport)
_DOCS = TypeAdapter(list[DocumentInfo])
_COUNT = TypeAdapter(Count)
_STATS = TypeAdapter(RAGStats)
_SEARCH = TypeAdapter(SearchResult)
_ANSWER = TypeAdapter(Answer)


class RemoteRAG:
    """A knowledge base (one namespace) served by a hello-memory service.

    Args:
        url: the service's base URL, e.g. ``http://127.0.0.1:8765``.
        namespace: the knowledge base; the API key must grant it.
        api_key: the key the service maps to a user and namespaces; none for a loopback service
            without keys.
        timeout: seconds per request; uploads get ``UPLOAD_TIMEOUT``.
        client: a pre-built ``httpx.Client``.
    """

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "default",
        api_key: str | SecretStr | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        client: Any = None,
    ) -> None:
        self._namespace = check_id(namespace, "namespace")
        self._http = Transport(url, api_key=api_key, timeout=timeout, client=client)
        self.url = self._http.url
        self._base = f"/v1/namespaces/{quote(self._namespace, safe='')}"

    @property
    def namespace(self) -> str:
        """The knowledge base; every call touches only it."""
        return self._namespace

    def _call(
        self,
        method: str,
        path: str,
        adapter: TypeAdapter[T],
        *,
        body: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> T:
        return self._http.call(method, self._base + path, adapter, body=body, **kwargs)

    def close(self) -> None:
        """Release the connection pool; idempotent."""
        self._http.close()

    def __enter__(self) -> RemoteRAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ingest -----------------------------------------------------------------------------
    def add_document(
        self,
        path: str | Path,
        *,
        document_id: str | None = None,
        chunk_tokens: int | None = None,
        overlap_tokens: int | None = None,
        metadata: dict[str, Any] | None = None,
        progress: Callable[[int, int], object] | None = None,
        source_path: str | None = None,
    ) -> IngestReport:
        """Upload a local file; the service converts it with MarkItDown and indexes it.

        The service does not stream its progress: ``progress(chunks, chunks)`` is called once, when the
        document is indexed. ``source_path`` is recorded instead of the file's path on this machine.

        Raises:
            ConversionError: the file is missing, not a regular file, empty or too large (checked
                here, before anything is sent), or the service cannot convert it.
        """
        if not isinstance(path, str | Path):
            raise ConversionError(
                repr(path), f"the path must be a str or os.PathLike, not {type(path).__name__}"
            )
        check_progress(progress)
        p = Path(path)
        _check_file(p, str(path), MAX_UPLOAD_BYTES)
        form: dict[str, Any] = {"source_path": str(p.resolve()) if source_path is None else source_path}
        if document_id is not None:
            form["document_id"] = document_id
        if chunk_tokens is not None:
            form["chunk_tokens"] = str(chunk_tokens)
        if overlap_tokens is not None:
            form["overlap_tokens"] = str(overlap_tokens)
        if metadata is not None:
            form["metadata"] = json.dumps(metadata, ensure_ascii=True)
        try:
            fh = p.open("rb")
        except OSError as e:  # only the file's own errors (PermissionDeniedError is an OSError too)
            raise ConversionError(str(path), f"cannot read the file ({e.strerror or e})") from e
        with fh:
            report = self._call(
                "POST", "/documents", _INGEST, files={"file": (p.name, fh)}, data=form, timeout=UPLOAD_TIMEOUT
            )
        if progress is not None:
            progress(report.chunks, report.chunks)
        return report

    def add_server_document(
        self,
        path: str,
        *,
        document_id: str | None = None,
        chunk_tokens: int | None = None,
        overlap_tokens: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> IngestReport:
        """Index a file on the service's machine; it must lie under the service's allowed roots."""
        body = {
            "path": path,
            "document_id": document_id,
            "chunk_tokens": chunk_tokens,
            "overlap_tokens": overlap_tokens,
            "metadata": metadata,
        }
        return self._call("POST", "/documents/path", _INGEST, body=body, timeout=UPLOAD_TIMEOUT)

    def add_text(
        self,
        text: str,
        *,
        document_id: str | None = None,
        source: str | None = None,
        chunk_tokens: int | None = None,
        overlap_tokens: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> IngestReport:
        """Index Markdown/plain text; without ``document_id`` the id is derived from the text."""
        body = {
            "text": text,
            "document_id": document_id,
            "source": source,
            "chunk_tokens": chunk_tokens,
            "overlap_tokens": overlap_tokens,
            "metadata": metadata,
        }
        return self._call("POST", "/texts", _INGEST, body=body, timeout=UPLOAD_TIMEOUT)

    # -- manage -----------------------------------------------------------------------------
    def list_documents(self) -> list[DocumentInfo]:
        """Documents of this namespace."""
        return self._call("GET", "/documents", _DOCS)

    def delete_document(self, document_id: str) -> int:
        """Delete a document's chunks everywhere; returns how many chunks were deleted."""
        doc = quote(check_id(document_id, "document_id"), safe="")
        return self._call("DELETE", f"/documents/{doc}", _COUNT).count

    def clear(self) -> int:
        """Delete every document of this namespace (never another namespace's); returns chunks deleted."""
        return self._call("DELETE", "/documents", _COUNT).count

    def stats(self) -> RAGStats:
        """Counts of this namespace."""
        return self._call("GET", "/stats", _STATS)

    # -- retrieve ---------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        min_score: float | None = None,
        enable_mqe: bool = False,
        enable_hyde: bool = False,
    ) -> SearchResult:
        """Hybrid (dense + BM25) search with optional MQE/HyDE expansion."""
        body = {
            "query": query,
            "limit": limit,
            "min_score": min_score,
            "enable_mqe": enable_mqe,
            "enable_hyde": enable_hyde,
        }
        return self._call("POST", "/search", _SEARCH, body=body, idempotent=True)

    def ask(
        self,
        question: str,
        *,
        limit: int = 5,
        enable_mqe: bool = False,
        enable_hyde: bool = False,
        min_score: float | None = None,
        budget_tokens: int = 3000,
    ) -> Answer:
        """Retrieve, fit whole chunks into ``budget_tokens``, answer with citations ``[n]``."""
        body = {
            "question": question,
            "limit": limit,
            "enable_mqe": enable_mqe,
            "enable_hyde": enable_hyde,
            "min_score": min_score,
            "budget_tokens": budget_tokens,
        }
        return self._call("POST", "/ask", _ANSWER, body=body)
